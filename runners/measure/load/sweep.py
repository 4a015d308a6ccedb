"""Find saturation: rate levels rising until throughput stops growing.

The plan's `rates` run first, in order; then each next rate is the last times FACTOR,
until a level's output tokens/s gains less than MIN_GAIN over the best level before it
(the server is saturated: more offered load buys no more work) or MAX_LEVELS have run.
GuideLLM's sweep brackets the range with a synchronous and a throughput run first; this
one walks up from the plan's first rate, so it needs no unbounded burst to find the top.
"""

from __future__ import annotations

from typing import Any, Callable

from runners.experiment import SWEEP_MAX_LEVELS

FACTOR = 1.5
MIN_GAIN = 0.05
MAX_LEVELS = SWEEP_MAX_LEVELS  # the schema bounds a cloud sweep's time with it


def next_rate(planned: tuple[float, ...], done: list[dict[str, Any]]) -> float | None:
    """The next rate to run, or None when the sweep is over."""
    if len(done) < len(planned):
        return planned[len(done)]
    if len(done) >= MAX_LEVELS:
        return None
    if saturated(done):
        return None
    return round(done[-1]["target_rate"] * FACTOR, 3)


def saturated(done: list[dict[str, Any]]) -> bool:
    """The last level gained less than MIN_GAIN over the best before it."""
    if len(done) < 2:
        return False
    best_before = max((lvl["output_tokens_per_s"] or 0) for lvl in done[:-1])
    return (done[-1]["output_tokens_per_s"] or 0) < best_before * (1 + MIN_GAIN)


def run(planned: tuple[float, ...], run_level: Callable[[float, int], dict[str, Any]]
        ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(levels, sweep block); `run_level(rate, index)` runs one rate level."""
    levels: list[dict[str, Any]] = []
    while (rate := next_rate(planned, levels)) is not None:
        levels.append(run_level(rate, len(levels)))
    best = max(levels, key=lambda lvl: lvl["output_tokens_per_s"] or 0)
    return levels, {"factor": FACTOR, "min_gain": MIN_GAIN, "max_levels": MAX_LEVELS,
                    "saturated": saturated(levels),
                    "peak_rate": best["target_rate"],
                    "peak_output_tokens_per_s": best["output_tokens_per_s"]}
