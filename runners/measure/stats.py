"""Distribution summaries and the decode-rate fit: pure arithmetic, units in the names."""

from __future__ import annotations

import statistics
from typing import Iterable


def percentile(values: list[float], pct: float) -> float:
    """Linear interpolation between closest ranks (numpy's default, as vLLM reports)."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("percentile of no values")
    rank = (len(ordered) - 1) * pct / 100.0
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def distribution(values: Iterable[float]) -> dict[str, float] | None:
    """{"p50", "p90", "p99", "mean", "n"} or None when there are no values."""
    values = list(values)
    if not values:
        return None
    return {"p50": percentile(values, 50), "p90": percentile(values, 90),
            "p99": percentile(values, 99), "mean": statistics.fmean(values), "n": len(values)}


def decode_fit(short_tokens: int, long_tokens: int, short_times_s: list[float],
               long_times_s: list[float]) -> tuple[float, float]:
    """(tokens_per_s, intercept_s) from the medians of two fixed reply lengths.

    The difference cancels every per-call fixed cost (network, queueing, prefill); the
    intercept is that fixed cost: what a zero-token reply would take.
    """
    t_short, t_long = statistics.median(short_times_s), statistics.median(long_times_s)
    if t_long <= t_short:
        raise ValueError(f"median {long_tokens}-token time {t_long:.4f} s is not above the "
                         f"{short_tokens}-token time {t_short:.4f} s")
    tokens_per_s = (long_tokens - short_tokens) / (t_long - t_short)
    return tokens_per_s, t_short - short_tokens / tokens_per_s
