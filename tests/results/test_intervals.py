"""The interval arithmetic against values worked out independently."""

import math
import random
import statistics

import pytest

from runners.results import intervals as iv


def test_wilson_matches_the_published_formula_values():
    # 37/40 and 0/40 at 95% (z = 1.959964): Wilson (1927) score interval.
    assert iv.wilson_95(37, 40) == pytest.approx((0.80136, 0.97416), abs=1e-5)
    assert iv.wilson_95(0, 40) == pytest.approx((0.0, 0.08762), abs=1e-5)
    assert iv.wilson_95(40, 40)[1] == 1.0 and iv.wilson_95(0, 0) is None


@pytest.mark.parametrize("df, t", [(1, 12.706), (2, 4.303), (9, 2.262), (30, 2.042),
                                   (35, 2.030), (50, 2.009), (1000, 1.962)])
def test_t_critical_values_within_the_stated_accuracy(df, t):
    # Exact t_{0.975}: df 35 2.0301, df 50 2.0086, df 1000 1.9623.
    assert iv.t_critical_95(df) == pytest.approx(t, abs=0.002)


def test_t_interval_of_a_mean():
    values = [48.0, 50.0, 52.0]
    lo, hi = iv.t_mean_95(values)
    half = 4.303 * statistics.stdev(values) / math.sqrt(3)
    assert (lo, hi) == pytest.approx((50 - half, 50 + half))
    assert iv.t_mean_95([1.0]) is None


def test_bootstrap_is_seeded_and_covers_the_median():
    rng = random.Random(5)
    values = [rng.gauss(100, 10) for _ in range(50)]
    first, again = iv.median_95(values), iv.median_95(values)
    assert first == again  # the same report twice gives the same interval
    assert first[0] < statistics.median(values) < first[1]
    assert 90 < first[0] and first[1] < 110
    assert iv.percentile_95([1.0], 99) is None


@pytest.mark.parametrize("b, c, p", [(0, 0, 1.0), (1, 0, 1.0), (0, 6, 0.03125),
                                     (2, 8, 0.109375), (10, 0, 2 / 1024)])
def test_mcnemar_exact_two_sided(b, c, p):
    assert iv.mcnemar_exact_p(b, c) == pytest.approx(p)


def test_overlap():
    assert iv.overlap((1, 2), (2, 3)) is True and iv.overlap((1, 2), (2.1, 3)) is False
    assert iv.overlap(None, (1, 2)) is None
