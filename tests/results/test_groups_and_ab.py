"""compare groups repeated runs (median, 95% interval, n) and sets every run answer by
answer against the baseline run (identical answers, flips, McNemar's exact p)."""

import json
import statistics
from pathlib import Path

import pytest

from runners.results import ab, compare, intervals
from tests.results.synthetic_run import write_run

RIGHT = {0: "1512", 1: "2079", 30: "Canberra", 31: "Ottawa"}  # Q1, Q2, Q31, Q32 right


def _summary(store) -> dict:
    return json.loads(Path(store.uri("summary.json")).read_text())


@pytest.fixture
def three_and_one(tmp_path):
    """Three runs of local-synthetic and one of local-faster (a higher decode rate)."""
    runs = [write_run(tmp_path / "runs", f"20261203T09000{i}Z-rep00{i}", seed=i, report=True,
                      answers=RIGHT) for i in (1, 2, 3)]
    other = write_run(tmp_path / "runs", "20261203T100000Z-fast01", seed=9, rate=60.0,
                      experiment="local-faster", report=True,
                      answers={0: "**1512.**", 1: "2078", 2: "5628", 30: "canberra"})
    return tmp_path, runs, other


def test_repeated_runs_are_one_ranked_row_with_median_interval_and_n(three_and_one):
    root, runs, _ = three_and_one
    result = compare.compare([root / "runs"], out_dir=root / "out")
    assert [(r["experiment"], r["n_runs"]) for r in result["rows"]] == [
        ("local-faster", 1), ("local-synthetic", 3)]
    rates = [_summary(s)["decode"]["tokens_per_s"] for s in runs]
    group = result["rows"][1]
    decode = group["figures"]["decode_tokens_per_s"]
    assert decode["median"] == statistics.median(rates) == group["decode_tokens_per_s"]
    assert decode["interval_95"] == pytest.approx(intervals.t_mean_95(rates))
    assert (decode["n"], decode["method"]) == (3, "t")
    ttft = [_summary(s)["stream"]["ttft_s"]["p50"] for s in runs]
    assert group["figures"]["ttft_p50_s"]["interval_95"] == pytest.approx(
        intervals.median_95(ttft))
    assert group["figures"]["ttft_p50_s"]["method"] == "bootstrap"
    text = result["markdown"].read_text()
    repeated = text.split("## Repeated runs")[1].split("\n## ")[0]
    line = next(ln for ln in repeated.splitlines() if ln.startswith("| local-synthetic"))
    lo, hi = decode["interval_95"]
    assert line.startswith(f"| local-synthetic | 3 | {decode['median']:,.1f} ({lo:,.1f}–{hi:,.1f})")
    assert line.endswith("| 4/40 (6%–17%) |")  # 12 of 120 pooled: Wilson 0.058–0.167
    assert text.count("| 🥈 local ") == 1  # one bar/row per experiment, not one per run
    assert len(compare.csv_text(result["rows"]).splitlines()) == 3


def test_answer_by_answer_against_the_baseline(three_and_one):
    root, runs, other = three_and_one
    result = compare.compare([root / "runs"], baseline="20261203T090001Z-rep001",
                             out_dir=root / "out")
    text = result["markdown"].read_text()
    section = text.split("## Answer by answer vs the baseline run (local")[1].split("\n## ")[0]
    assert "run 20261203T090001Z-rep001)" in section
    fast = next(ln for ln in section.splitlines() if "fast01" in ln)
    cells = [c.strip() for c in fast.strip("|").split("|")]
    # Q1 "**1512.**" = "1512" and Q31 "canberra" = "Canberra" once normalised; Q2, Q3 and
    # Q32 differ from the baseline's answers.
    assert cells[2] == "37 of 40"
    assert cells[3:6] == ["Q2, Q32", "Q3", "1"]
    assert "intervals apart" in cells[6] and cells[6].startswith("**1.2")
    twin = next(ln for ln in section.splitlines() if "rep002" in ln)
    assert "| 40 of 40 | none | none | 1 |" in twin and "intervals overlap" in twin
    assert "rep001 |" not in section.split("|---|")[1]  # the baseline is not set against itself


def test_mcnemar_marks_a_real_difference():
    base = [{"answer": "x", "correct": True}] * 10 + [{"answer": "y", "correct": False}] * 30
    run = [{"answer": "z", "correct": False}] * 10 + [{"answer": "y", "correct": False}] * 30
    diff = ab.answer_diff(run, base)
    assert diff["right_to_wrong"] == list(range(1, 11)) and diff["identical"] == 30
    assert diff["mcnemar_p"] == pytest.approx(2 / 1024)


def test_the_ranked_row_of_a_group_shows_its_pooled_quality(three_and_one):
    root, _, _ = three_and_one
    group = compare.compare([root / "runs"], out_dir=root / "out")["rows"][1]
    assert (group["quality"], group["quality_interval_95"]) == ("4/40", "6%–17%")
