"""The report's sections: speeds explained in one place, load TTFT and queueing per level,
n beside every distribution, quality with its Wilson interval and both scores."""

import pytest

from runners.results import report
from tests.results.synthetic_run import phase_files


@pytest.fixture
def built():
    files = phase_files("20261203T090000Z-syn001", answers={0: "1512", 17: "942"})
    summary = report.build_summary(files)
    return summary, files, report.markdown(summary, files, "no charts", [])


def _section(text: str, title: str) -> str:
    return text.split(f"## {title}\n")[1].split("\n## ")[0]


def test_speeds_say_which_figure_each_cost_line_uses_and_why_they_differ(built):
    summary, _, text = built
    speeds = _section(text, "Speeds: which figure is which")
    d = summary["decode"]
    decode_row = next(line for line in speeds.splitlines() if line.startswith("| decode rate"))
    assert f"| {d['tokens_per_s']:.1f} (95% " in decode_row
    assert decode_row.endswith("| $ / 1M output tokens, one request |")
    assert next(line for line in speeds.splitlines()
                if line.startswith("| load, concurrency 4")).endswith(
        "| $ / 1M output tokens, concurrency 4 |")
    tpot = summary["stream"]["tpot_s"]["p50"]
    assert f"| 1 / TPOT p50 | {1 / tpot:.1f} |" in speeds
    assert f"the intercept, {d['intercept_s'] * 1000:.0f} ms" in speeds
    assert "prefill of the prompt plus request overhead" in speeds
    ttft = summary["stream"]["ttft_s"]["p50"]
    assert f"intercept − TTFT ({(d['intercept_s'] - ttft) * 1000:.0f} ms)" in speeds
    predicted = 128 / (d["intercept_s"] + 128 / d["tokens_per_s"])
    assert f"predicts {predicted:.1f} tokens/s at concurrency 1" in speeds


def test_load_levels_show_ttft_and_queueing(built):
    summary, _, text = built
    rows = [line for line in _section(text, "Throughput vs concurrency").splitlines()
            if line[:3] in ("| 1", "| 2", "| 4")]
    base = summary["load"][0]["ttft_s"]["p50"]
    for line, level in zip(rows, summary["load"]):
        ttft = level["ttft_s"]
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[5] == f"{ttft['p50'] * 1000:.1f} / {ttft['p99'] * 1000:.1f}"
        assert cells[6] == f"{(ttft['p50'] - base) * 1000:.1f}"
        assert cells[-1] == str(level["latency_s"]["n"])


def test_every_distribution_says_its_n_and_tokens_say_their_source(built):
    summary, _, text = built
    table = _section(text, "Summary")
    assert "| TTFT p50 / p90 / p99 (ms, streamed) |" in table and table.count("| 10 |") >= 3
    assert summary["token_source"] == {"decode": "server usage", "stream": "estimate",
                                       "load": "estimate"}
    assert "Token counts: decode server usage, stream estimate, load estimate" in table


def test_quality_echo_only_scores_zero_and_shows_wilson_and_raw():
    files = phase_files("r")  # every reply echoes its question
    quality = report.build_summary(files)["quality"]
    assert (quality["correct"], quality["correct_raw"]) == (0, 1)  # 942 inside question 18
    assert quality["interval_95"] == [0.0, pytest.approx(0.0876, abs=1e-4)]
    assert report.quality_text(quality) == ("0 / 40 (95% 0%–9%); seeds' regex (echo counted) "
                                            "1 / 40")
