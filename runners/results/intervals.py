"""95% intervals and the exact McNemar test: pure arithmetic on plain lists, standard
library only.

- Wilson score interval for a proportion (quality: correct of 40).
- Percentile bootstrap, seeded so a report is reproducible, for percentiles and for any
  statistic without a formula (the decode fit, a median of runs).
- Student t interval for a mean; critical values from a table (below).
- McNemar's exact test: a two-sided binomial test on the discordant pairs.
"""

from __future__ import annotations

import math
import random
import statistics
from typing import Callable, Sequence

Z_95 = 1.959964  # standard normal, two-sided 95%
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20261203

# Two-sided 95% critical values of Student's t (t_{0.975, df}) for df 1..30, from the
# standard table (to 3 decimals); above 30 the value is interpolated linearly in 1/df
# between 30, 40, 60, 120 and the normal limit, which is within 0.002 of the exact value.
_T_975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201,
          2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069,
          2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)
_T_975_TAIL = ((30, 2.042), (40, 2.021), (60, 2.000), (120, 1.980), (math.inf, Z_95))


def t_critical_95(df: int) -> float:
    """t_{0.975, df}: the half-width multiplier of a two-sided 95% t interval."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be at least 1, not {df}")
    if df <= len(_T_975):
        return _T_975[df - 1]
    for (lo_df, lo_t), (hi_df, hi_t) in zip(_T_975_TAIL, _T_975_TAIL[1:]):
        if df <= hi_df:
            inv, inv_lo, inv_hi = 1 / df, 1 / lo_df, (1 / hi_df if hi_df != math.inf else 0.0)
            return lo_t + (hi_t - lo_t) * (inv_lo - inv) / (inv_lo - inv_hi)
    return Z_95  # unreachable: the last row is infinity


def wilson_95(successes: int, trials: int) -> tuple[float, float] | None:
    """Wilson score interval for successes/trials; None for no trials."""
    if trials <= 0:
        return None
    p, z2 = successes / trials, Z_95 ** 2
    centre = (p + z2 / (2 * trials)) / (1 + z2 / trials)
    half = Z_95 * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials ** 2)) / (1 + z2 / trials)
    return max(0.0, centre - half), min(1.0, centre + half)


def t_mean_95(values: Sequence[float]) -> tuple[float, float] | None:
    """Student t interval for the mean; None below two values."""
    if len(values) < 2:
        return None
    mean, sd = statistics.fmean(values), statistics.stdev(values)
    half = t_critical_95(len(values) - 1) * sd / math.sqrt(len(values))
    return mean - half, mean + half


def bootstrap_95(samples: Sequence[Sequence[float]],
                 statistic: Callable[..., float | None],
                 resamples: int = BOOTSTRAP_RESAMPLES,
                 seed: int = BOOTSTRAP_SEED) -> tuple[float, float] | None:
    """Percentile bootstrap of `statistic(*samples)`: each sample list is resampled with
    replacement on its own (so two reply lengths stay two groups). None when a sample has
    fewer than two values or the statistic is undefined in most resamples."""
    if not samples or any(len(s) < 2 for s in samples):
        return None
    rng = random.Random(seed)
    values = []
    for _ in range(resamples):
        value = statistic(*([rng.choice(s) for _ in s] for s in samples))
        if value is not None and math.isfinite(value):
            values.append(value)
    if len(values) < resamples / 2:
        return None
    values.sort()
    return _rank(values, 0.025), _rank(values, 0.975)


def _rank(ordered: list[float], q: float) -> float:
    rank = (len(ordered) - 1) * q
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def median_95(values: Sequence[float]) -> tuple[float, float] | None:
    """Bootstrap interval of the median of `values` (a percentile, so no t formula)."""
    return bootstrap_95([list(values)], lambda v: statistics.median(v))


def percentile_95(values: Sequence[float], pct: float) -> tuple[float, float] | None:
    """Bootstrap interval of the `pct` percentile of `values`."""
    return bootstrap_95([list(values)], lambda v: _rank(sorted(v), pct / 100))


def mcnemar_exact_p(only_first: int, only_second: int) -> float:
    """Two-sided exact McNemar p-value: of the pairs where exactly one side was right,
    how surprising the split is if either side were equally likely (binomial, p = 1/2)."""
    n = only_first + only_second
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(only_first, only_second) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def overlap(a: tuple[float, float] | None, b: tuple[float, float] | None) -> bool | None:
    """Whether two intervals overlap; None when either is missing."""
    if a is None or b is None:
        return None
    return a[0] <= b[1] and b[0] <= a[1]
