"""Charts keep their rules (one unit per panel, linear concurrency, values on bars, n and
run id in titles, interval error bars); report.html stands alone and renders every
section, a later one included; `report --open` opens it."""

import base64
import re
from pathlib import Path

import pytest

from runners import cli
from runners.results import charts, html, report
from tests.results.synthetic_run import phase_files, write_run

pytest.importorskip("matplotlib")
RUN = "20261203T090000Z-syn001"


@pytest.fixture
def figures(monkeypatch):
    """Draw the run's charts, keeping the matplotlib figures instead of their PNG bytes."""
    kept = {}

    def keep(plt, fig):
        kept[len(kept)] = fig
        return f"png{len(kept)}".encode()

    monkeypatch.setattr(charts, "_png", keep)
    files = phase_files(RUN)
    summary = report.build_summary(files)
    pngs, note = charts.run_charts(summary, files)
    assert sorted(pngs) == ["decode_rate.png", "latency.png", "throughput.png"]
    by_name = dict(zip(("decode", "throughput", "latency"), kept.values()))
    return summary, by_name


def _title(fig) -> str:
    return (fig._suptitle.get_text() if fig._suptitle else "") + " ".join(
        ax.get_title() for ax in fig.axes)


def test_every_title_names_the_run_and_n(figures):
    _, figs = figures
    for name, fig in figs.items():
        assert RUN in _title(fig) and "n" in _title(fig), name
    assert "n = 2, 4, 8 requests per level" in _title(figs["throughput"])


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
