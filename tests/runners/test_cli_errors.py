"""Issue 15: the CLI paths that gave tracebacks give one line naming the file and the
problem, exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.runners.conftest import write_openai_experiment

ROOT = Path(__file__).resolve().parents[2]


def one_line(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "runners", *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    line, = done.stderr.strip().splitlines()
    return line


@pytest.mark.parametrize("command", ["run", "validate"])
def test_a_non_utf8_experiment_file(tmp_path, command):
    bad = tmp_path / "latin.toml"
    bad.write_bytes('name = "latin"\ndescription = "caf\xe9"\n'.encode("latin-1"))
    line = one_line(command, str(bad))
    assert f"{bad}: -: not UTF-8 text (byte 0xe9 at offset 33)" in line


@pytest.mark.parametrize("command", ["run", "validate"])
def test_a_folder_given_as_an_experiment(tmp_path, command):
    folder = tmp_path / "exp.toml"
    folder.mkdir()
    assert f"{folder}: -: is a folder; give an experiment .toml file" in one_line(
        command, str(folder))


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    from benchmarks.loopback_server import LoopbackServer, Truth
    from runners import cli
    from tests.runners.test_fault_matrix import small_plan

    tmp = tmp_path_factory.mktemp("run")
    with LoopbackServer(Truth(ttft_s=0.001, gap_s=0.0005)) as server:
        exp = write_openai_experiment(tmp, server.base_url, tools=False, plan=small_plan())
        assert cli.main(["run", str(exp), "--store", str(tmp)]) == 0
    return next(tmp.glob("runs/*/*/"))


def test_compare_with_a_non_utf8_summary(run_dir, tmp_path):
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "summary.json").write_bytes((run_dir / "summary.json").read_bytes()
                                        .replace(b'"openai"', b'"\xff"', 1))
    line = one_line("compare", str(copy), "--out", str(tmp_path / "out"))
    assert line.startswith(f"error: {copy / 'summary.json'}: not UTF-8 text (byte 0xff")


def test_compare_out_naming_a_file(run_dir, tmp_path):
    target = tmp_path / "a-file"
    target.write_text("")
    assert one_line("compare", str(run_dir), "--out", str(target)) == \
        f"error: {target}: --out names a file; give an output folder"


def test_a_corrupt_phase_json_is_named(run_dir, tmp_path):
    copy = tmp_path / "run"
    copy.mkdir()
    for path in run_dir.glob("*.json"):
        (copy / path.name).write_bytes(path.read_bytes())
    (copy / "decode.json").write_text('{"tokens_per_s": ')
    line = one_line("report", str(copy))
    assert line.startswith(f"error: {copy / 'decode.json'}: not valid JSON: ")
    json.loads((run_dir / "decode.json").read_text())  # the original is untouched
