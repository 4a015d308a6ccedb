"""PNG charts of one run and of a compare, drawn with matplotlib when it is installed (an
optional extra of the local CLI; Lambda has none and the reports say so).

Rules every chart keeps: one panel per unit (milliseconds never share an axis with
seconds); concurrency as evenly spaced categories labelled with their real values, not
a log axis; bars start at zero; every bar carries its value; every title names the run
(or how many runs) and n; error bars are the 95% intervals the summary records.
"""

from __future__ import annotations

import io
from typing import Any, Callable

from runners.results import engine_section, workload_section

NO_MATPLOTLIB = ("Charts skipped: matplotlib is not installed (it is an optional extra of the "
                 "local CLI: pip install -r requirements-local.txt).")
BAR_COLOURS = ("#4c72b0", "#dd8452", "#55a868")


def _pyplot():
    """matplotlib.pyplot on the Agg backend, or None when matplotlib is absent."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def _png(plt, fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def _error_bars(ax, positions: list[float], values: list[float],
                pairs: list[list[float] | None], horizontal: bool = False) -> None:
    """Error bars from 95% intervals, only on bars that have one (no cap means unknown)."""
    known = [i for i, p in enumerate(pairs) if p]
    if not known:
        return
    spans = [[max(0.0, values[i] - pairs[i][0]) for i in known],
             [max(0.0, pairs[i][1] - values[i]) for i in known]]
    at, heights = [positions[i] for i in known], [values[i] for i in known]
    if horizontal:
        ax.errorbar(heights, at, xerr=spans, fmt="none", ecolor="black", capsize=3)
    else:
        ax.errorbar(at, heights, yerr=spans, fmt="none", ecolor="black", capsize=3)


def _label_bars(ax, bars, fmt: Callable[[float], str],
                pairs: list[list[float] | None] | None = None) -> None:
    """Each bar's value above it, or above its error bar's cap so the two do not collide."""
    for bar, pair in zip(bars, pairs or [None] * len(bars)):
        top = max(bar.get_height(), pair[1]) if pair else bar.get_height()
        ax.annotate(fmt(bar.get_height()), (bar.get_x() + bar.get_width() / 2, top),
                    textcoords="offset points", xytext=(0, 2), ha="center", va="bottom",
                    fontsize=8)


# ---------------------------------------------------------------- one run


def _decode_chart(plt, summary: dict[str, Any], files: dict[str, Any]) -> bytes | None:
    decode = files.get("decode") or {}
    ok = [smp for smp in decode.get("samples") or [] if smp["status"] == "ok"]
    if not ok:
        return None
    fig, ax = plt.subplots(figsize=(6.5, 4))
    ax.scatter([smp["tokens_requested"] for smp in ok], [smp["seconds"] for smp in ok],
               label="replies")
    rate, icpt = decode.get("tokens_per_s"), decode.get("intercept_s")
    if rate:
        xs = [0, decode["long_tokens"]]
        pair = summary["decode"].get("interval_95")
        span = f" (95% {pair[0]:.1f}–{pair[1]:.1f})" if pair else ""
        ax.plot(xs, [icpt + x / rate for x in xs], "--",
                label=f"{rate:.1f} tokens/s{span}, intercept {icpt * 1000:.0f} ms")
    ax.legend(loc="upper left", fontsize=8)
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.set(xlabel="reply tokens", ylabel="seconds",
           title=f"Decode rate — run {summary['run_id']}\n"
                 f"n = {len(ok)} replies ({decode.get('repeats')} per length)")
    return _png(plt, fig)


def _throughput_chart(plt, summary: dict[str, Any]) -> bytes | None:
    # Rate-mode levels have no concurrency; workload_section draws them (load_levels.png).
    levels = [lvl for lvl in summary["load"]
              if lvl["tokens_per_s"] and lvl.get("concurrency") is not None]
    if not levels:
        return None
    fig, ax = plt.subplots(figsize=(6.5, 4))
    slots = list(range(len(levels)))
    values = [lvl["tokens_per_s"] for lvl in levels]
    bars = ax.bar(slots, values, color=BAR_COLOURS[0])
    _label_bars(ax, bars, lambda v: f"{v:.1f}")
    ax.set_xticks(slots, [str(lvl["concurrency"]) for lvl in levels])
    ax.set_ylim(0, max(values) * 1.15)
    n = ", ".join(f"{lvl['requests']}" for lvl in levels)
    ax.set(xlabel="concurrent requests", ylabel="output tokens/s (all requests together)",
           title=f"Throughput vs concurrency — run {summary['run_id']}\n"
                 f"n = {n} requests per level")
    return _png(plt, fig)


def _latency_chart(plt, summary: dict[str, Any]) -> bytes | None:
    stream = summary["stream"]
    panels = [(unit, scale, [k for k in keys if stream.get(k)])
              for unit, scale, keys in (("ms", 1000, ("ttft_s", "tpot_s", "itl_s")),
                                        ("s", 1, ("e2el_s",)))]
    panels = [p for p in panels if p[2]]
    if not panels:
        return None
    widths = [len(keys) + 0.6 for _, _, keys in panels]
    fig, axes = plt.subplots(1, len(panels), figsize=(3.2 * sum(widths) / 2 + 2, 4),
                             gridspec_kw={"width_ratios": widths}, squeeze=False)
    width = 0.26
    for ax, (unit, scale, keys) in zip(axes[0], panels):
        for i, pct in enumerate(("p50", "p90", "p99")):
            values = [stream[k][pct] * scale for k in keys]
            pairs = [[x * scale for x in stream[k][f"{pct}_interval_95"]]
                     if stream[k].get(f"{pct}_interval_95") else None for k in keys]
            slots = [j + (i - 1) * width for j in range(len(keys))]
            bars = ax.bar(slots, values, width, label=pct, color=BAR_COLOURS[i])
            _error_bars(ax, slots, values, pairs)
            _label_bars(ax, bars, (lambda v: f"{v:.1f}") if unit == "ms" else
                        (lambda v: f"{v:.2f}"), pairs)
        ax.set_xticks(range(len(keys)), [f"{k.removesuffix('_s').upper()}\nn={stream[k].get('n', '?')}"
                                         for k in keys])
        ax.set_ylim(bottom=0)
        ax.margins(y=0.15)
        ax.set_ylabel(unit)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=8,
               bbox_to_anchor=(0.5, -0.06))
    n = next(stream[k]["n"] for k in ("e2el_s", "ttft_s", "tpot_s", "itl_s") if stream.get(k))
    fig.suptitle(f"Streamed latency, one request at a time — run {summary['run_id']}\n"
                 f"n = {n} requests; error bars: 95% bootstrap interval of p50 and p99 (none for ITL: chunk "
                 "times are not kept)", fontsize=10)
    return _png(plt, fig)


def run_charts(summary: dict[str, Any], files: dict[str, Any]) -> tuple[dict[str, bytes], str]:
    """PNG bytes by file name, and a sentence saying what was drawn or why not."""
    plt = _pyplot()
    if plt is None:
        return {}, NO_MATPLOTLIB
    drawn = {"decode_rate.png": _decode_chart(plt, summary, files),
             "throughput.png": _throughput_chart(plt, summary),
             "latency.png": _latency_chart(plt, summary),
             "device_utilization.png": _device_chart(plt, summary, files)}

    def save(name: str, fig) -> None:
        drawn[name] = _png(plt, fig)

    workload_section.charts(summary, plt, save)  # context.png, load_levels.png
    pngs = {name: png for name, png in drawn.items() if png}
    return pngs, f"{len(pngs)} chart(s) drawn with matplotlib."


def _device_chart(plt, summary: dict[str, Any], files: dict[str, Any]) -> bytes | None:
    fig = engine_section.device_figure(plt, summary, files)
    return _png(plt, fig) if fig is not None else None


# ---------------------------------------------------------------- compare


def _row_label(r: dict[str, Any]) -> str:
    runs = r.get("runs") or [r]
    if len(runs) == 1:
        return f"{r['label']}\n{runs[0]['run_id']}"
    # A group names its runs: all of them when two, else the first and the last.
    ids = [x["run_id"] for x in runs]
    named = ", ".join(ids) if len(ids) == 2 else f"{ids[0]} … {ids[-1]}"
    return f"{r['label']}\nmedian of {len(ids)} runs\n{named}"


def compare_charts(rows: list[dict[str, Any]]) -> tuple[dict[str, bytes], str | None]:
    """Horizontal bars of decode rate and $ per 1M tokens, one bar per ranked row (a
    repeated experiment is one bar: its median, with its interval)."""
    plt = _pyplot()
    if plt is None:
        return {}, "matplotlib is not installed; charts skipped"
    pngs = {}
    for field, interval, title, unit, name, fmt in (
        ("decode_tokens_per_s", "decode_interval_95", "Decode, one request (tok/s)",
         "output tokens/s", "decode.png", lambda v: f"{v:.1f}"),
        ("usd_per_million_one_request", None, "$ per 1M output tokens, one request",
         "$ per 1M output tokens", "usd-per-million.png",
         lambda v: f"${v:.3f}" if v < 1 else f"${v:.2f}"),
    ):
        shown = [r for r in rows if r[field] is not None][::-1]
        if not shown:
            continue
        values = [r[field] for r in shown]
        pairs = [r.get(interval) if interval else None for r in shown]
        fig, ax = plt.subplots(figsize=(8, 0.62 * len(shown) + 1.6))
        ax.barh(range(len(shown)), values, color=BAR_COLOURS[0])
        _error_bars(ax, list(range(len(shown))), values, pairs, horizontal=True)
        top = max(values)
        for i, v in enumerate(values):
            # inside a long bar (clear of its error bar), just past a short one
            inside = v > 0.15 * top
            ax.text(v / 2 if inside else v + 0.01 * top, i, fmt(v), va="center",
                    ha="center" if inside else "left", fontsize=9,
                    color="white" if inside else "black", fontweight="bold")
        ax.set_yticks(range(len(shown)), [_row_label(r) for r in shown], fontsize=8)
        ax.set_xlim(0, top * 1.2)
        ax.set_xlabel(unit)
        runs = sum(len(r.get("runs") or [r]) for r in shown)
        rows_n = f"{len(shown)} row" + ("s" if len(shown) != 1 else "")
        ax.set_title(f"{title}\nn = {runs} runs in {rows_n}"
                     + ("; error bars: 95% intervals" if any(pairs) else ""), fontsize=10)
        fig.tight_layout()
        pngs[name] = _png(plt, fig)
    return pngs, None
