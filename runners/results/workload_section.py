"""The workload parts of summary.json and report.md: the context sweep (TTFT, prefill and
decode against prompt length: "decode flat, end-to-end falls") and the per-level load
table of every profile (burst, concurrency, rate, sweep) with SLO goodput.

report.py calls these through one-line hooks; every function takes the phase files or
the summary and returns plain data, Markdown lines or PNGs.
"""

from __future__ import annotations

from typing import Any, Callable

DIST_KEYS = ("p50", "p90", "p99", "mean", "n")
LATENCIES = ("ttft_s", "tpot_s", "itl_s", "e2el_s")


def _dist(d: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if not d else {k: d.get(k) for k in DIST_KEYS}


def summary_load(levels: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """summary.json `load`: one entry per level, the earlier keys first (concurrency,
    tokens_per_s, requests, errors, throttles, latency_s), then the workload figures."""
    out = []
    for lvl in levels:
        entry = {"concurrency": lvl.get("concurrency"), "tokens_per_s": lvl.get("tokens_per_s"),
                 "requests": lvl.get("requests"), "errors": lvl.get("errors"),
                 "throttles": lvl.get("throttles"),
                 "latency_s": _dist(lvl.get("latency_s") or lvl.get("e2el_s")),
                 "mode": lvl.get("mode", "burst"), "target_rate": lvl.get("target_rate"),
                 "requests_per_s": lvl.get("requests_per_s"),
                 "sent_per_s": lvl.get("sent_per_s"),
                 "input_tokens_per_s": lvl.get("input_tokens_per_s"),
                 "output_tokens_per_s": lvl.get("output_tokens_per_s", lvl.get("tokens_per_s")),
                 "total_tokens_per_s": lvl.get("total_tokens_per_s"),
                 "rate_shortfall": lvl.get("rate_shortfall"),
                 "scheduling_lag_s": _dist(lvl.get("scheduling_lag_s")),
                 "slo": lvl.get("slo"), "shards": lvl.get("shards")}
        entry.update({k: _dist(lvl.get(k)) for k in LATENCIES})
        out.append(entry)
    return out


def summary_load_profile(load: dict[str, Any] | None) -> dict[str, Any] | None:
    """summary.json `load_profile`: the mode, the sweep's finding, the SLO's verdict."""
    if not load or not load.get("levels"):
        return None
    return {"mode": load.get("mode", "burst"), "sweep": load.get("sweep"),
            "slo": load.get("slo"), "prompt": load.get("prompt"),
            "dataset": (load.get("prompt") or {}).get("dataset")}


def summary_context(context: dict[str, Any] | None) -> list[dict[str, Any]]:
    """summary.json `context`: per prompt length, TTFT with n, prefill and decode rates."""
    if not context or context.get("skipped"):
        return []
    return [{"prompt_tokens": row["prompt_tokens"],
             "served_prompt_tokens": row.get("served_prompt_tokens"),
             "ttft_s": _dist(row.get("ttft_s")),
             "prefill_tokens_per_s": row.get("prefill_tokens_per_s"),
             "decode_tokens_per_s": row.get("decode_tokens_per_s"),
             "end_to_end_tokens_per_s": row.get("end_to_end_tokens_per_s")}
            for row in context.get("lengths") or []]


# ---------------------------------------------------------------- Markdown


def level_name(level: dict[str, Any]) -> str:
    """'c=4' for a concurrency level, '0.4/s' for a rate level."""
    if level.get("target_rate"):
        return f"{level['target_rate']:g}/s"
    return f"c={level.get('concurrency')}"


def _f(value: Any, fmt: str = "{:.1f}") -> str:
    return "-" if value is None else fmt.format(value)


def _ms_n(d: dict[str, Any] | None, pct: str = "p50") -> str:
    return "-" if not d else f"{d[pct] * 1000:.1f} (n={d['n']})"


def _spread(values: list[float]) -> float | None:
    """(max - min) / max, the share a figure moves across the sweep."""
    values = [v for v in values if v]
    return (max(values) - min(values)) / max(values) if len(values) > 1 else None


def context_lines(rows: list[dict[str, Any]]) -> list[str]:
    if not rows:
        return []
    lines = ["## Context length", "",
             "Decode rate from the short/long forced-reply differential at each prompt length "
             "(prefill cancels); end-to-end is the long reply's tokens over its whole time, "
             "prefill included.", "",
             "| prompt tokens (asked / served) | TTFT p50 ms (n) | TTFT p99 ms | prefill tokens/s "
             "| decode tokens/s | end-to-end tokens/s |", "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['prompt_tokens']} / {_f(r['served_prompt_tokens'], '{}')} | "
                     f"{_ms_n(r['ttft_s'])} | {_ms_n(r['ttft_s'], 'p99').split(' ')[0]} | "
                     f"{_f(r['prefill_tokens_per_s'])} | {_f(r['decode_tokens_per_s'])} | "
                     f"{_f(r['end_to_end_tokens_per_s'])} |")
    decode = _spread([r["decode_tokens_per_s"] for r in rows])
    e2e = [r["end_to_end_tokens_per_s"] for r in rows if r["end_to_end_tokens_per_s"]]
    if decode is not None and len(e2e) > 1:
        lines += ["", f"Decode moves {decode * 100:.1f}% across "
                  f"{rows[0]['prompt_tokens']}-{rows[-1]['prompt_tokens']} prompt tokens; "
                  f"end-to-end goes from {e2e[0]:.1f} to {e2e[-1]:.1f} tokens/s."]
    return lines + [""]


def load_lines(levels: list[dict[str, Any]], profile: dict[str, Any] | None,
               cost: dict[str, Any] | None = None) -> list[str]:
    """The per-level table of every profile; burst levels also keep report.py's table."""
    if not levels:
        return []
    mode = (profile or {}).get("mode", "burst")
    lines = [f"## Load levels ({mode})", "",
             "| level | req/s | in / out / total tokens/s | TTFT p50 / p99 ms (n) | "
             "TPOT p50 ms | ITL p50 ms | E2EL p50 / p99 s | errors | throttles | "
             "behind target | SLO met | goodput req/s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for lvl in levels:
        name = level_name(lvl)
        ttft, e2el, slo = lvl.get("ttft_s"), lvl.get("e2el_s"), lvl.get("slo") or {}
        shortfall, share = lvl.get("rate_shortfall"), slo.get("share_meeting")
        cells = [
            name, _f(lvl.get("requests_per_s"), "{:.2f}"),
            " / ".join(_f(lvl.get(k)) for k in ("input_tokens_per_s", "output_tokens_per_s",
                                                "total_tokens_per_s")),
            f"{ttft['p50'] * 1000:.1f} / {ttft['p99'] * 1000:.1f} ({ttft['n']})" if ttft else "-",
            _ms1(lvl.get("tpot_s")), _ms1(lvl.get("itl_s")),
            f"{e2el['p50']:.3f} / {e2el['p99']:.3f}" if e2el else "-",
            str(lvl.get("errors")), str(lvl.get("throttles")),
            "-" if shortfall is None else f"{shortfall * 100:.1f}%",
            ("-" if share is None else f"{share * 100:.0f}%")
            + (" (holds)" if slo.get("holds") else ""),
            _f(slo.get("goodput_requests_per_s"), "{:.2f}"),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    sweep = (profile or {}).get("sweep")
    if sweep:
        lines += ["", f"Sweep: peak {_f(sweep.get('peak_output_tokens_per_s'))} output tokens/s "
                  f"at {sweep.get('peak_rate')} requests/s; "
                  + ("saturated (the last step gained under "
                     f"{sweep['min_gain'] * 100:.0f}%)." if sweep.get("saturated")
                     else "not saturated within the levels run.")]
    slo = (profile or {}).get("slo")
    if slo:
        price = ((cost or {}).get("usd_per_million_output_tokens") or {}).get("slo_rate")
        held = slo.get("highest_rate_holding")
        lines += ["", f"SLO ({slo.get('description')}): " + (
            f"highest rate holding it {held:g} requests/s"
            + (f", ${price:,.3f} per 1M output tokens there." if price else ".")
            if held is not None else "no rate offered held it.")]
    return lines + [""]


def _ms1(d: dict[str, Any] | None) -> str:
    return "-" if not d else f"{d['p50'] * 1000:.2f}"


def markdown_lines(summary: dict[str, Any], files: dict[str, Any] | None = None) -> list[str]:
    """The report's workload sections, in order: context, then load levels."""
    return (context_lines(summary.get("context") or [])
            + load_lines(summary.get("load") or [], summary.get("load_profile"),
                         summary.get("cost")))


# ---------------------------------------------------------------- charts


def _run_title(what: str, summary: dict[str, Any], n: str) -> str:
    return f"{what} — run {summary.get('run_id')}\n{n}"


def _panel(ax, xs: list[float], ys: list[float], style: str, label: str,
           fmt: Callable[[float], str], below: bool = False) -> None:
    """One line on its own unit's panel from zero, every point labelled with its value
    (`below` puts a second line's labels under its points so close lines stay readable)."""
    ax.plot(xs, ys, style, label=label)
    for x, y in zip(xs, ys):
        ax.annotate(fmt(y), (x, y), textcoords="offset points", xytext=(0, -13 if below else 6),
                    ha="center", fontsize=8)
    ax.set_ylim(0, max(ax.get_ylim()[1] if len(ax.lines) > 1 else 0, max(ys) * 1.25))


def _ms(v: float) -> str:
    return f"{v:.0f}" if v >= 100 else f"{v:.1f}"


def charts(summary: dict[str, Any], plt, save: Callable[[str, Any], None]) -> None:
    """context.png: TTFT (ms) over decode and end-to-end rates (tokens/s) against prompt
    length; load_levels.png: output tokens/s over TTFT p50 (ms) per offered rate (rate
    mode). One unit per panel, the panels stacked on the shared x axis; no error bars: the
    summary has no intervals for these figures (only the stream phase's are bootstrapped)."""
    rows = [r for r in summary.get("context") or [] if r.get("ttft_s")]
    if rows:
        # Prompt lengths as evenly spaced categories labelled with their values.
        xs = list(range(len(rows)))
        fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
        _panel(top, xs, [r["ttft_s"]["p50"] * 1000 for r in rows], "o-", "TTFT p50", _ms)
        top.set_ylabel("TTFT p50 (ms)")
        for key, label, style, below in (
                ("decode_tokens_per_s", "decode", "s-", False),
                ("end_to_end_tokens_per_s", "end-to-end, prefill included", "^--", True)):
            points = [(x, r[key]) for x, r in zip(xs, rows) if r.get(key)]
            if points:
                _panel(bottom, *map(list, zip(*points)), style, label, lambda v: f"{v:.1f}",
                       below)
        bottom.set(xlabel="prompt tokens", ylabel="tokens/s")
        bottom.set_xticks(xs, [str(r["prompt_tokens"]) for r in rows])
        bottom.legend(loc="lower left", fontsize=8)
        n = ", ".join(str(r["ttft_s"].get("n")) for r in rows)
        top.set_title(_run_title("TTFT and decode vs prompt length", summary,
                                 f"TTFT n = {n} requests per length"), fontsize=10)
        fig.tight_layout()
        save("context.png", fig)
    levels = [lvl for lvl in summary.get("load") or []
              if lvl.get("target_rate") and lvl.get("output_tokens_per_s")]
    if levels:
        # Offered rates as evenly spaced categories labelled with their values (not a log axis).
        slots = list(range(len(levels)))
        fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
        _panel(top, slots, [lvl["output_tokens_per_s"] for lvl in levels], "o-",
               "output tokens/s", lambda v: f"{v:.1f}")
        top.set_ylabel("output tokens/s")
        timed = [(i, lvl["ttft_s"]["p50"] * 1000) for i, lvl in enumerate(levels)
                 if lvl.get("ttft_s")]
        if timed:
            _panel(bottom, *map(list, zip(*timed)), "s-", "TTFT p50", _ms)
        bottom.set(xlabel="offered requests/s", ylabel="TTFT p50 (ms)")
        bottom.set_xticks(slots, [f"{lvl['target_rate']:g}" for lvl in levels])
        n = ", ".join(str(lvl.get("requests")) for lvl in levels)
        top.set_title(_run_title("Throughput and TTFT vs request rate", summary,
                                 f"n = {n} requests per level"), fontsize=10)
        fig.tight_layout()
        save("load_levels.png", fig)
