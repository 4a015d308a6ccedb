"""`python -m runners list|validate`: as a user runs them, in a subprocess."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "runners", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


def test_list_shows_every_experiment():
    out = run("list")
    assert out.returncode == 0, out.stderr
    names = {p.stem for p in (ROOT / "experiments").glob("*.toml")}
    listed = {line.split()[0] for line in out.stdout.splitlines()[1:]}
    assert listed == names


def test_validate_all_passes():
    out = run("validate")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith(" valid, 0 invalid")


def test_validate_bad_file_prints_one_line_and_no_traceback(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text((ROOT / "experiments" / "e2b-emb4-g6.toml").read_text()
                   .replace('name = "e2b-emb4-g6"', 'name = "bad"')
                   .replace('regions = ["us-east-2", "us-east-1", "us-west-2"]', "regions = []"))
    good = ROOT / "experiments" / "e2b-emb4-g6.toml"
    out = run("validate", str(good), str(bad))
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert out.stderr.strip() == f"error  {bad}: regions: is empty; give at least 1"
    assert "1 valid, 1 invalid" in out.stdout


def test_a_folder_given_as_a_log_file_is_one_line(tmp_path):
    done = run("engine-log", str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"error: [Errno 21] Is a directory: '{tmp_path}'"]
