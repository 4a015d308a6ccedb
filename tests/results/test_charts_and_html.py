"""Charts keep their rules (one unit per panel, linear concurrency, values on bars, n and
run id in titles, interval error bars); report.html stands alone and renders every
section, a later one included; `report --open` opens it."""

import base64
import re
from pathlib import Path

import pytest

from runners import cli
from runners.results import charts, html, report
from tests.results.synthetic_run import phase_files, with_workload, write_run

pytest.importorskip("matplotlib")
RUN = "20261203T090000Z-syn001"


@pytest.fixture(autouse=True)
def _close_figures():
    """The tests keep figures open to inspect them; close them after each test."""
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


def _draw(monkeypatch, files: dict) -> tuple[dict, dict]:
    """The run's summary and its charts by file name, as the matplotlib figures they were
    before PNG encoding."""
    kept = {}

    def keep(plt, fig):
        key = f"figure{len(kept)}".encode()
        kept[key] = fig
        return key

    monkeypatch.setattr(charts, "_png", keep)
    summary = report.build_summary(files)
    pngs, _ = charts.run_charts(summary, files)
    return summary, {name: kept[key] for name, key in pngs.items()}


@pytest.fixture
def figures(monkeypatch):
    summary, by_file = _draw(monkeypatch, phase_files(RUN))
    assert sorted(by_file) == ["decode_rate.png", "latency.png", "throughput.png"]
    return summary, {name.split(".")[0].split("_")[0]: fig for name, fig in by_file.items()}


@pytest.fixture
def gpu_figures(monkeypatch):
    """A run with a context sweep, rate-mode load levels and nvidia-smi samples."""
    summary, by_file = _draw(monkeypatch, with_workload(phase_files(RUN)))
    # Rate levels have no concurrency: load_levels.png draws them, throughput.png does not.
    assert sorted(by_file) == ["context.png", "decode_rate.png", "device_utilization.png",
                               "latency.png", "load_levels.png"]
    return summary, by_file


def _title(fig) -> str:
    return (fig._suptitle.get_text() if fig._suptitle else "") + " ".join(
        ax.get_title() for ax in fig.axes)


def test_every_title_names_the_run_and_n(figures, gpu_figures):
    for name, fig in [*figures[1].items(), *gpu_figures[1].items()]:
        assert f"run {RUN}" in _title(fig) and re.search(r"\bn = \d", _title(fig)), name
    assert "n = 10 requests" in _title(figures[1]["latency"])
    assert "n = 2, 4, 8 requests per level" in _title(figures[1]["throughput"])


def test_throughput_is_linear_categories_from_zero_with_values(figures):
    summary, figs = figures
    [ax] = figs["throughput"].axes
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "4"]
    assert ax.get_xscale() == "linear" and ax.get_yscale() == "linear"
    assert ax.get_ylim()[0] == 0
    values = [t.get_text() for t in ax.texts]
    assert values == [f"{lvl['tokens_per_s']:.1f}" for lvl in summary["load"]]


def test_latency_has_one_panel_per_unit_and_interval_error_bars(figures):
    summary, figs = figures
    ms, s = figs["latency"].axes[:2]
    assert (ms.get_ylabel(), s.get_ylabel()) == ("ms", "s")
    assert [t.get_text().split("\n")[0] for t in ms.get_xticklabels()] == ["TTFT", "TPOT", "ITL"]
    assert [t.get_text() for t in s.get_xticklabels()] == ["E2EL\nn=10"]
    assert ms.get_yscale() == "linear" and ms.get_ylim()[0] == 0
    ttft = summary["stream"]["ttft_s"]
    assert f"{ttft['p50'] * 1000:.1f}" in [t.get_text() for t in ms.texts]
    # The p50 bars' error bars span the recorded bootstrap interval of p50.
    lo, hi = ttft["p50_interval_95"]
    caps = [line.get_ydata() for c in ms.containers if hasattr(c, "lines") and c.lines
            for line in c.lines[1] if len(line.get_ydata())]
    assert any(pytest.approx(lo * 1000) in list(y) for y in caps)
    assert any(pytest.approx(hi * 1000) in list(y) for y in caps)


def _one_unit_panels(fig, xlabel: str, units: list[str]) -> list:
    """The figure is panels stacked on one shared x axis, one unit each, no twin axes."""
    axes = fig.axes
    assert [ax.get_ylabel() for ax in axes] == units
    assert axes[1].get_xlabel() == xlabel and axes[0].get_shared_x_axes().joined(*axes)
    for ax in axes:
        assert ax.get_yscale() == "linear" and ax.get_ylim()[0] == 0
    return axes


def test_context_chart_has_one_unit_per_panel_with_values(gpu_figures):
    summary, figs = gpu_figures
    rows = summary["context"]
    ms, rate = _one_unit_panels(figs["context.png"], "prompt tokens",
                                ["TTFT p50 (ms)", "tokens/s"])
    assert [t.get_text() for t in rate.get_xticklabels()] == ["128", "512", "2048"]
    assert [t.get_text() for t in ms.texts] == [
        f"{r['ttft_s']['p50'] * 1000:.0f}" if r["ttft_s"]["p50"] >= 0.1
        else f"{r['ttft_s']['p50'] * 1000:.1f}" for r in rows]
    assert [t.get_text() for t in rate.texts] == [
        f"{r[k]:.1f}" for k in ("decode_tokens_per_s", "end_to_end_tokens_per_s") for r in rows]
    assert "n = 7, 7, 7 requests per length" in _title(figs["context.png"])


def test_load_levels_chart_has_one_unit_per_panel_and_even_rate_ticks(gpu_figures):
    summary, figs = gpu_figures
    rate, ms = _one_unit_panels(figs["load_levels.png"], "offered requests/s",
                                ["output tokens/s", "TTFT p50 (ms)"])
    assert [t.get_text() for t in ms.get_xticklabels()] == ["0.5", "1", "2", "4"]
    assert list(rate.lines[0].get_xdata()) == [0, 1, 2, 3]  # evenly spaced, not log
    assert [t.get_text() for t in rate.texts] == [
        f"{lvl['output_tokens_per_s']:.1f}" for lvl in summary["load"]]
    assert len(ms.texts) == 4
    assert "n = 15, 30, 60, 120 requests per level" in _title(figs["load_levels.png"])


def test_device_chart_names_every_measured_phase(gpu_figures):
    _, figs = gpu_figures
    [ax] = figs["device_utilization.png"].axes
    assert [t.get_text() for t in ax.texts] == ["warmup", "decode", "stream", "context",
                                                "load", "quality"]
    assert "n = 210 samples" in _title(figs["device_utilization.png"])


def test_compare_charts_name_runs_and_count_them(tmp_path, monkeypatch):
    from runners.results import compare
    from tests.results.runs import copy_fixture_runs

    kept = []
    monkeypatch.setattr(charts, "_png", lambda plt, fig: kept.append(fig) or b"png")
    compare.compare([copy_fixture_runs(tmp_path / "runs")], out_dir=tmp_path / "cmp")
    assert len(kept) == 2
    for fig, unit in zip(kept, ("output tokens/s", "$ per 1M output tokens")):
        [ax] = fig.axes
        assert "n = 6 runs in 6 rows" in ax.get_title() and ax.get_xlabel() == unit
        labels = [t.get_text() for t in ax.get_yticklabels()]
        assert all(re.search(r"\n\d{8}T\d{6}Z-\w+$", label) for label in labels), labels
        assert len(ax.texts) == 6 and ax.get_xlim()[0] == 0


def test_a_repeated_experiment_is_one_bar_naming_its_runs(tmp_path, monkeypatch):
    from runners.results import compare

    for i in range(3):
        write_run(tmp_path / "runs", f"20261203T09000{i}Z-rep00{i}", seed=i, report=True)
    kept = []
    monkeypatch.setattr(charts, "_png", lambda plt, fig: kept.append(fig) or b"png")
    compare.compare([tmp_path / "runs"], out_dir=tmp_path / "cmp")
    [ax] = kept[0].axes
    [label] = [t.get_text() for t in ax.get_yticklabels()]
    assert label.endswith("median of 3 runs\n20261203T090000Z-rep000 … 20261203T090002Z-rep002")
    assert "n = 3 runs in 1 row; error bars: 95% intervals" in ax.get_title()


def test_report_html_stands_alone_and_renders_a_section_added_later(tmp_path, monkeypatch):
    def added(summary, files):
        return ["## Added later", "", "| a | b |", "|---|---|", "| 1 | **2** |", ""]

    monkeypatch.setattr(report, "SECTIONS", [*report.SECTIONS, added])
    store = write_run(tmp_path)
    report.write_report(store, "")
    page = Path(store.uri("report.html")).read_text()
    text = Path(store.uri("report.md")).read_text()
    for heading in re.findall(r"^## (.*)$", text, re.M):
        assert f"<h2>{html._inline(heading)}</h2>" in page
    assert "<td>1</td><td><strong>2</strong></td>" in page
    assert not re.findall(r'(?:src|href)="(?!data:)', page) and "http" not in page
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    assert len(images) == 3
    assert base64.b64decode(images[0]) == Path(store.uri("charts/decode_rate.png")).read_bytes()


def test_without_matplotlib_the_report_says_so_and_html_is_still_written(tmp_path,
                                                                         monkeypatch):
    monkeypatch.setattr(charts, "_pyplot", lambda: None)
    store = write_run(tmp_path)
    out = report.write_report(store, "")
    assert out["charts"] == charts.NO_MATPLOTLIB and "report.html" in out["written"]
    assert "<img" not in Path(store.uri("report.html")).read_text()


def test_report_open_opens_the_page(tmp_path, monkeypatch, capsys):
    opened = []
    monkeypatch.setattr("webbrowser.open", opened.append)
    store = write_run(tmp_path)
    assert cli.main(["report", store.uri(), "--open"]) == 0
    page = Path(store.uri("report.html")).resolve()
    assert opened == [page.as_uri()] and page.is_file()
    assert f"opened {page}" in capsys.readouterr().err
