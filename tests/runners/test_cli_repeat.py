"""`run --repeat N`: N run folders, then the group's median, interval and n."""

import subprocess
import sys
from pathlib import Path

from runners import cli
from tests.runners.conftest import benchmark_plan, write_openai_experiment

ROOT = Path(__file__).resolve().parents[2]
TINY = benchmark_plan(decode_lengths=[8, 32], decode_repeats=2, stream_requests=2,
                      concurrency=[1], load_batches=1, toolcall_runs=0, stream_tokens=8,
                      load_tokens=8, quality_suite="none")


def test_run_repeat_writes_n_runs_and_prints_the_group(loopback, tmp_path, capsys):
    exp = write_openai_experiment(tmp_path, loopback().base_url, plan=TINY, tools=False)
    assert cli.main(["run", str(exp), "--store", str(tmp_path), "--repeat", "2"]) == 0
    out = capsys.readouterr()
    assert out.err.count("run 1 of 2") == 1 and out.err.count("run 2 of 2") == 1
    folders = sorted(Path(tmp_path, "runs").glob("*-loop-test/*/summary.json"))
    assert len(folders) == 2
    group = out.out.split("## Repeated runs")[1]
    assert "| loop-test | 2 |" in group
    # in run order; two runs that start in the same second sort by their random suffix
    (line,) = [ln for ln in out.out.splitlines() if ln.startswith("compare them: ")]
    named = line.removeprefix("compare them: python -m runners compare ").split()
    assert sorted(named) == sorted(str(f.parent) for f in folders)


def test_repeat_below_one_is_one_line(tmp_path):
    exp = write_openai_experiment(tmp_path, "http://127.0.0.1:9", plan=TINY)
    done = subprocess.run([sys.executable, "-m", "runners", "run", str(exp), "--repeat", "0"],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == ["error: --repeat: 0 runs; give 1 or more"]
