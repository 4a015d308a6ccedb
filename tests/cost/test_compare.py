"""The compare report over six fixture runs, snapshot-tested, plus its rules."""

import json
import shutil
from pathlib import Path

import pytest

from runners.results import compare as c

RUNS = Path(__file__).parent / "fixtures" / "runs"


@pytest.fixture
def runs(tmp_path, monkeypatch):
    """A copy of the fixture runs, with the working folder set so paths print alike."""
    shutil.copytree(RUNS, tmp_path / "runs")
    monkeypatch.chdir(tmp_path)
    return Path("runs")


def test_report_markdown_and_csv(runs, snapshot):
    result = c.compare([runs], out_dir="out")
    assert result["markdown"].read_text() == snapshot(name="compare.md")
    assert result["csv"].read_text() == snapshot(name="compare.csv")


def test_rows_are_sorted_in_code_and_ratios_use_the_baseline(runs):
    result = c.compare([runs], baseline="e2b-emb4-ml-g6", out_dir="out")
    rows = result["rows"]
    assert [r["decode_tokens_per_s"] for r in rows] == [131.9, 130.4, 96.5, 36.5, 36.0, 34.9]
    assert result["baseline"] == "20261102T110000Z-d4e5f6"
    g6 = rows[0]
    # g6 against ml.g6: 131.9 / 96.5 faster, 1.69 / 3.24 of the price per token.
    assert g6["x_decode"] == pytest.approx(131.9 / 96.5)
    assert g6["x_usd_one_request"] == pytest.approx(
        (0.8048 / 131.9) / (1.1267 / 96.5))


def test_roofline_flags_the_instance_at_a_quarter_of_its_ceiling(runs):
    rows = {r["experiment"]: r for r in c.compare([runs], out_dir="out")["rows"]}
    inf2 = rows["e2b-neuron-inf2"]
    # 816.7 GB/s / (5.73 GiB = 6.1526e9 B) = 132.7 tok/s; 36.5 / 132.7 = 27.5%
    assert inf2["roofline_ceiling_tokens_per_s"] == pytest.approx(132.74, abs=0.01)
    assert inf2["roofline_share"] == pytest.approx(0.275, abs=0.001)
    assert inf2["weights_from"] == "model.weights_gib"
    assert rows["e2b-emb4-g6"]["weights_from"] == "memory.weights_gib"
    assert rows["nova-micro-bedrock"]["roofline_share"] is None  # bandwidth not disclosed
    lines = c.flags(list(rows.values()))
    assert any(line.startswith("⚠ EC2 inf2.xlarge decodes at 27%") for line in lines)
    assert not any("trn1" in line for line in lines)  # 36%: not flagged


def test_billable_minutes_come_from_the_final_timeline(runs):
    rows = {r["experiment"]: r for r in c.compare([runs], out_dir="out")["rows"]}
    g6 = rows["e2b-emb4-g6"]
    # The cost phase saw 38 minutes (teardown pending); provision to teardown was 41.
    summary = json.loads(next(runs.rglob("*e2b-emb4-g6/*/summary.json")).read_text())
    assert summary["cost"]["idle"]["billable_minutes"] == 38.0
    assert (g6["billable_minutes"], g6["billable_final"]) == (41.0, True)
    assert g6["billable_usd"] == pytest.approx(0.8048 * 41 / 60, abs=1e-4)
    assert rows["nova-micro-bedrock"]["billable_minutes"] is None


def test_nothing_is_overwritten(runs):
    c.compare([runs], out_dir="out")
    with pytest.raises(c.CompareError, match=r"out/compare.md: exists; give another output"):
        c.compare([runs], out_dir="out")


@pytest.mark.parametrize("setup, arg, message", [
    (None, "missing", "missing: no such run folder"),
    ("empty", "empty", "empty: no summary.json in it or below it"),
    ("bad-json", "bad-json", "bad-json/summary.json: not valid JSON"),
    ("other-schema", "other-schema", "other-schema/summary.json: schema: must be "
                                     "'benchstack.summary/1'"),
])
def test_bad_run_folders_are_one_line(tmp_path, monkeypatch, setup, arg, message):
    monkeypatch.chdir(tmp_path)
    if setup:
        Path(setup).mkdir()
        if setup == "bad-json":
            Path(setup, "summary.json").write_text("{")
        if setup == "other-schema":
            Path(setup, "summary.json").write_text('{"schema": "x"}')
    with pytest.raises(c.CompareError) as caught:
        c.compare([arg], out_dir="out")
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)


def test_unknown_baseline_lists_the_runs(runs):
    with pytest.raises(c.CompareError, match=r"baseline 'nope' matches no run; runs: "
                                             r"e2b-emb4-g6 \(20261102T100000Z-a1b2c3\)"):
        c.compare([runs], baseline="nope", out_dir="out")


def test_charts_are_drawn_or_the_skip_is_said(runs):
    result = c.compare([runs], out_dir="out")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert result["charts"] == []
        assert result["charts_skipped"] == "matplotlib is not installed; charts skipped"
    else:
        assert result["charts_skipped"] is None
        assert [p.name for p in result["charts"]] == ["decode.png", "usd-per-million.png"]
        assert all(p.read_bytes().startswith(b"\x89PNG") for p in result["charts"])


def test_a_malformed_time_names_the_file(runs):
    path = next(runs.rglob("*e2b-emb4-g6/*/summary.json"))
    summary = json.loads(path.read_text())
    summary["timeline"]["teardown_finished_at"] = "yesterday"
    path.write_text(json.dumps(summary))
    with pytest.raises(c.CompareError, match=rf"^{path}: timeline: Invalid isoformat string: 'yesterday'$"):
        c.compare([runs], out_dir="out")
