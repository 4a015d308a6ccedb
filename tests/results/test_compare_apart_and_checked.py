"""compare: failed runs listed apart (never ranked), latency columns with n and token
source, and summaries validated on read with one line naming file and field."""

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from runners.results import compare as c
from tests.results.runs import copy_fixture_runs, fixture_summary, write_run

ROOT = Path(__file__).resolve().parents[2]
NOTHING = {"tokens_per_s": None, "intercept_s": None, "short_tokens": 16, "long_tokens": 512,
           "repeats": 5, "tokens_verified": False}


@pytest.fixture
def runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return copy_fixture_runs(Path("runs"))


def _failed_provision(runs: Path) -> None:
    phases = {"provision": {"state": "failed", "detail": "capacity: no g6.xlarge in us-east-2"}}
    write_run(runs, fixture_summary(), "20261203T000000Z-fail01", decode=NOTHING,
              stream={k: None for k in ("ttft_s", "itl_s", "tpot_s", "e2el_s")}, load=[],
              quality=None, toolcall={"supported": False, "runs": 0, "correct": 0,
                                      "filter_ok": 0}, phases=phases)


def test_a_failed_run_is_listed_apart_with_its_failure_and_never_ranked(runs):
    _failed_provision(runs)
    result = c.compare([runs], out_dir="out")
    assert len(result["rows"]) == 6 and [r["run_id"] for r in result["apart"]] == [
        "20261203T000000Z-fail01"]
    text = result["markdown"].read_text()
    assert text.startswith("# Compare: 7 runs, 1 of them failed or measured nothing")
    apart = text.split("## Failed or measured nothing (not ranked)")[1]
    assert "| 20261203T000000Z-fail01 | provision failed: capacity: no g6.xlarge" in apart
    ranked = text.split("## Failed or measured nothing")[0]
    assert "fail01" not in ranked and ranked.count("🥉") == 1


def test_a_run_that_measured_nothing_is_apart_even_without_phase_outcomes(runs):
    write_run(runs, fixture_summary(), "20261203T000000Z-empty1", decode=NOTHING,
              stream={}, load=[], quality=None)
    apart = c.compare([runs], out_dir="out")["apart"]
    assert [(r["run_id"], r["failure"]) for r in apart] == [
        ("20261203T000000Z-empty1", "measured nothing")]


def test_a_failed_run_cannot_be_the_baseline(runs):
    _failed_provision(runs)
    with pytest.raises(c.CompareError, match="baseline '20261203T000000Z-fail01' is run "
                                             "20261203T000000Z-fail01, which provision failed"):
        c.compare([runs], baseline="20261203T000000Z-fail01", out_dir="out")


def test_latency_columns_carry_n_and_the_token_source(runs):
    summary = fixture_summary()
    summary["stream"]["ttft_s"]["n"] = 10
    summary["token_source"] = {"decode": "server usage", "stream": "estimate",
                               "load": "estimate"}
    write_run(runs, summary, "20261203T000000Z-est001")
    text = c.compare([runs], out_dir="out")["markdown"].read_text()
    latency = text.split("## Latency (streamed, one request at a time)")[1]
    line = next(ln for ln in latency.splitlines() if "est001" in ln)
    ttft = summary["stream"]["ttft_s"]
    assert f"| {ttft['p50'] * 1000:.1f} / {ttft['p99'] * 1000:.1f} |" in line
    assert line.endswith("| 10 | estimate (stream, load) |")
    old = next(ln for ln in latency.splitlines() if "a1b2c3" in ln)
    assert old.endswith("| — | not recorded |")  # written before n and sources were kept


@pytest.mark.parametrize("change, message", [
    (lambda s: s["decode"].update(tokens_per_s="fast"),
     "decode.tokens_per_s: must be a number, not 'fast'"),
    (lambda s: s["decode"].update(tokens_per_s=math.nan),
     "decode.tokens_per_s: must be finite, not nan"),
    (lambda s: s["load"][0].update(output_tokens=10 ** 12, max_tokens=256, ok=2),
     "load[0].output_tokens: 1000000000000 tokens from 2 replies of at most 256 tokens each "
     "is implausible"),
    (lambda s: s["load"][1].update(tokens_per_s=8.3e14),
     "load[1].tokens_per_s: 8.3e+14 is implausible (above 1e+06)"),
    (lambda s: s["quality"].update(correct=41), "quality.correct: 41 is more than the 40"),
    (lambda s: s["stream"]["ttft_s"].update(p50=-1), "stream.ttft_s.p50: must not be negative"),
    (lambda s: s.update(load={"c": 1}), "load: must be a list"),
])
def test_a_bad_summary_is_one_line_naming_file_and_field(runs, change, message):
    path = next(runs.rglob("*e2b-emb4-g6/*/summary.json"))
    summary = json.loads(path.read_text())
    change(summary)
    path.write_text(json.dumps(summary))
    with pytest.raises(c.CompareError) as caught:
        c.compare([runs], out_dir="out")
    assert str(caught.value).startswith(f"{path}: {message}")
    assert "\n" not in str(caught.value)


def test_the_cli_says_a_bad_summary_in_one_line(runs, tmp_path):
    path = next(runs.rglob("*e2b-emb4-g6/*/summary.json"))
    summary = json.loads(path.read_text())
    summary["decode"]["tokens_per_s"] = "fast"
    path.write_text(json.dumps(summary))
    done = subprocess.run([sys.executable, "-m", "runners", "compare", str(tmp_path / runs),
                           "--out", str(tmp_path / "out")], capture_output=True, text=True,
                          cwd=ROOT)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        f"error: {tmp_path / path}: decode.tokens_per_s: must be a number, not 'fast'"]
