"""Runs of one experiment, grouped: one ranked row per experiment, and every figure the
group shows as its median over the runs with a 95% interval and n.

Intervals (runners/results/intervals.py): figures that are means of many tokens (rates,
$ per token) get Student's t interval of the mean over the runs; figures that are
percentiles (TTFT, TPOT, E2EL p50 and p99) get a seeded bootstrap interval of the median
over the runs; quality pools the runs' answers into one Wilson interval.
"""

from __future__ import annotations

import statistics
from typing import Any

from runners.results import intervals

T, BOOTSTRAP = "t", "bootstrap"
# (row field, label, unit scale, digits, interval method)
FIGURES = (
    ("decode_tokens_per_s", "decode tok/s", 1, 1, T),
    ("best_load_tokens_per_s", "best load tok/s", 1, 1, T),
    ("usd_per_million_one_request", "$/1M, 1 request", 1, 3, T),
    ("ttft_p50_s", "TTFT p50 ms", 1000, 1, BOOTSTRAP),
    ("ttft_p99_s", "TTFT p99 ms", 1000, 1, BOOTSTRAP),
    ("tpot_p50_s", "TPOT p50 ms", 1000, 2, BOOTSTRAP),
    ("e2el_p50_s", "E2EL p50 s", 1, 3, BOOTSTRAP),
    ("e2el_p99_s", "E2EL p99 s", 1, 3, BOOTSTRAP),
)
# Fields a grouped row carries as the median of its runs (the rest come from its latest run).
MEDIAN_FIELDS = tuple(f[0] for f in FIGURES) + (
    "usd_per_million_highest", "roofline_share", "tpot_p99_s")


def figure(values: list[float], method: str) -> dict[str, Any] | None:
    """{"median", "interval_95", "n", "method"} of the runs' values, or None with none."""
    if not values:
        return None
    pair = intervals.t_mean_95(values) if method == T else intervals.median_95(values)
    return {"median": statistics.median(values), "interval_95": pair, "n": len(values),
            "method": method}


def quality_figure(runs: list[dict[str, Any]]) -> dict[str, Any] | None:
    scored = [r for r in runs if r["quality_correct"] is not None and r["quality_total"]]
    if not scored:
        return None
    correct, total = (sum(r[k] for r in scored) for k in ("quality_correct", "quality_total"))
    return {"median": statistics.median(r["quality_correct"] for r in scored),
            "total": scored[0]["quality_total"], "n": len(scored),
            "interval_95": intervals.wilson_95(correct, total), "method": "Wilson, pooled"}


def group(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per experiment. A single run is its own row (with "runs": [it]); a repeated
    experiment's row takes the median of MEDIAN_FIELDS and the rest from its latest run."""
    by_experiment: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_experiment.setdefault(r["experiment"], []).append(r)
    grouped = []
    for runs in by_experiment.values():
        runs = sorted(runs, key=lambda r: r["run_id"])
        merged = dict(runs[-1], runs=runs, n_runs=len(runs))
        if len(runs) > 1:
            for field in MEDIAN_FIELDS:
                values = [r[field] for r in runs if r[field] is not None]
                merged[field] = statistics.median(values) if values else None
            merged["figures"] = {f[0]: figure([r[f[0]] for r in runs if r[f[0]] is not None],
                                              f[4]) for f in FIGURES}
            merged["quality_figure"] = q = quality_figure(runs)
            if q:  # the ranked row shows the median score and the pooled interval too
                merged["quality"] = f"{q['median']:g}/{q['total']}"
                merged["quality_interval_95"] = (f"{q['interval_95'][0]:.0%}–"
                                                 f"{q['interval_95'][1]:.0%}")
            merged["decode_interval_95"] = (merged["figures"]["decode_tokens_per_s"] or {}).get(
                "interval_95")
        grouped.append(merged)
    return grouped


def _cell(fig: dict[str, Any] | None, scale: float, digits: int) -> str:
    if not fig:
        return "—"
    text = f"{fig['median'] * scale:,.{digits}f}"
    pair = fig["interval_95"]
    return text + (f" ({pair[0] * scale:,.{digits}f}–{pair[1] * scale:,.{digits}f})"
                   if pair else " (no interval)")


def markdown(grouped: list[dict[str, Any]]) -> list[str]:
    """The "Repeated runs" section: [] when no experiment ran more than once."""
    repeated = [g for g in grouped if g["n_runs"] > 1]
    if not repeated:
        return []
    header = ["Experiment", "n runs", *(f[1] for f in FIGURES), "Quality (pooled)"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for g in repeated:
        q = g["quality_figure"]
        quality = "—" if not q else (f"{q['median']:g}/{q['total']} ({q['interval_95'][0]:.0%}"
                                     f"–{q['interval_95'][1]:.0%})")
        lines.append("| " + " | ".join([g["experiment"], str(g["n_runs"]), *(
            _cell(g["figures"][f[0]], f[2], f[3]) for f in FIGURES), quality]) + " |")
    return ["## Repeated runs",
            "Median over the runs, then the 95% interval: Student t of the mean for rates and "
            "$ per token; a seeded percentile bootstrap (2000 resamples) of the median for "
            "percentiles (TTFT, TPOT, E2EL); Wilson over the pooled answers for quality. "
            "Ranked rows above show these medians.", "\n".join(lines)]
