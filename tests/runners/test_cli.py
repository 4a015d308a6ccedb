"""CLI: run / report / compare, and one-line errors for user mistakes."""

import subprocess
import sys
from pathlib import Path

from runners import cli
from tests.runners.conftest import write_openai_experiment

ROOT = Path(__file__).resolve().parents[2]


def test_run_then_report_then_compare(loopback, tmp_path, capsys):
    exp = write_openai_experiment(tmp_path, loopback().base_url)
    assert cli.main(["run", str(exp), "--store", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    run_dir = out.split("run folder: ")[1].strip()
    assert "| loop-test |" in out and Path(run_dir, "summary.json").exists()
    assert cli.main(["report", run_dir]) == 0
    out = capsys.readouterr()
    assert out.out.startswith("# loop-test") and "kept as first written" in out.err
    out_dir = tmp_path / "compare"
    assert cli.main(["compare", run_dir, "--out", str(out_dir)]) == 0
    out = capsys.readouterr()
    assert out.out.startswith("# Compare: 1 runs") and f"| {Path(run_dir).name} |" in out.out
    assert (out_dir / "compare.md").read_text() == out.out
    assert (out_dir / "compare.csv").read_text().count("\n") == 2  # header and one run
    assert cli.main(["compare", run_dir, "--out", str(out_dir)]) == 2  # never overwritten
    assert "exists" in capsys.readouterr().err


def test_user_mistakes_are_one_line(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "bad"\nbackend = "warp"\n')
    for args in (["run", "no-such-experiment"], ["run", str(bad)], ["report", str(tmp_path)],
                 ["compare", str(tmp_path / "missing")]):
        done = subprocess.run([sys.executable, "-m", "runners", *args], capture_output=True,
                              text=True, cwd=ROOT)
        assert done.returncode == 2, args
        assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
