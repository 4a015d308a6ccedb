"""Hand-computed figures from the seed's "What Each Backend Costs" table (2026-10-12)."""

from datetime import datetime, timezone

import pytest

from runners.cost import arithmetic as a


@pytest.mark.parametrize("usd_per_hour, tokens_per_s, expected", [
    # 0.8048 / (131.9 * 3600) * 1e6 = 0.8048 / 474,840 * 1e6 = 1.6949
    (0.8048, 131.9, 1.69),
    (1.1267, 96.5, 3.24),   # SageMaker ml.g6.xlarge
    (0.556, 34.9, 4.43),    # g5g.2xlarge
    (0.7582, 36.5, 5.77),   # inf2.xlarge
    (1.3438, 36.0, 10.37),  # trn1.2xlarge
])
def test_usd_per_million_output_tokens_reproduces_the_seed_table(usd_per_hour, tokens_per_s,
                                                                  expected):
    assert round(a.usd_per_million_output_tokens(usd_per_hour, tokens_per_s), 2) == expected


def test_sixteen_parallel_on_a_g6_costs_fifteen_cents():
    # The seed's $0.150 at 16 parallel implies ~1,490 tok/s aggregate:
    # 0.8048 / (1490 * 3600) * 1e6 = 0.15004
    assert a.usd_per_million_output_tokens(0.8048, 1490) == pytest.approx(0.15004, abs=1e-5)


def test_rate_must_be_positive():
    with pytest.raises(ValueError, match="tokens_per_s"):
        a.usd_per_million_output_tokens(0.8048, 0)


@pytest.mark.parametrize("usd_per_hour, expected", [
    (0.8048, 588), (1.1267, 822), (0.556, 406), (0.7582, 553), (1.3438, 981),
])
def test_usd_per_month_24x7_is_730_hours(usd_per_hour, expected):
    assert round(a.usd_per_month_24x7(usd_per_hour)) == expected


def test_bedrock_price_with_five_input_tokens_per_output_token():
    # 0.14 + 5 * 0.035 = 0.315 $/1M output tokens for Nova Micro
    assert a.bedrock_usd_per_million_output_tokens_with_input(0.035, 0.14) == pytest.approx(0.315)
    assert a.bedrock_usd_per_million_output_tokens_with_input(0.035, 0.14, 0) == pytest.approx(0.14)


def test_break_even_g6_against_nova_micro_is_710_tokens_per_s():
    # By hand: 0.315 $/1M = 3.15e-7 $/token; the g6 costs 0.8048 / 3600 = 2.2356e-4 $/s;
    # 2.2356e-4 / 3.15e-7 = 709.7 output tokens/s around the clock. The seed says ~710.
    rate = a.break_even_output_tokens_per_s(0.8048, 0.035, 0.14)
    assert rate == pytest.approx(709.7, abs=0.05)
    # At that rate the instance's $/1M equals Bedrock's, by construction.
    assert a.usd_per_million_output_tokens(0.8048, rate) == pytest.approx(0.315)


def test_break_even_moves_with_the_input_ratio():
    # No input tokens: 0.8048 / (0.14e-6 * 3600) = 1596.8 tok/s
    assert a.break_even_output_tokens_per_s(0.8048, 0.035, 0.14, 0) == pytest.approx(1596.8, abs=0.1)


def test_billable_minutes_and_their_cost():
    start = datetime(2026, 10, 12, 10, 0, tzinfo=timezone.utc)
    end = datetime(2026, 10, 12, 13, 17, 24, tzinfo=timezone.utc)  # 3.29 h in Creating
    minutes = a.billable_minutes(start, end)
    assert minutes == pytest.approx(197.4)
    assert a.usd_for_minutes(1.1267, minutes) == pytest.approx(3.7068, abs=1e-4)
    with pytest.raises(ValueError, match="before it starts"):
        a.billable_minutes(end, start)
