"""The cost block's workload figures: $ per 1M output tokens at the highest rate that
held the SLO, and the break-even with the plan's measured input/output ratio."""

import pytest

from runners.cost import arithmetic
from tests.cost.test_phase import results, run


def rate_results(levels):
    res = results()
    res["load"] = [{"concurrency": None, "tokens_per_s": out, "output_tokens_per_s": out,
                    "input_tokens_per_s": inp, "target_rate": rate, "slo": {"holds": holds}}
                   for rate, out, inp, holds in levels]
    return res


def test_slo_rate_prices_the_highest_rate_that_held():
    block = run("e2b-emb4-g6", rate_results([(1, 100.0, 400.0, True), (2, 200.0, 800.0, True),
                                             (4, 260.0, 1040.0, False)]))
    per_million = block["usd_per_million_output_tokens"]
    assert "the load phase ran rate levels" in " ".join(block["missing"])
    assert per_million["slo_rate_requests_per_s"] == 2
    assert per_million["slo_rate_tokens_per_s"] == 200.0
    assert per_million["slo_rate"] == pytest.approx(
        arithmetic.usd_per_million_output_tokens(0.8048, 200.0), abs=1e-6)


def test_break_even_uses_the_measured_input_output_ratio():
    block = run("e2b-emb4-g6", rate_results([(1, 100.0, 400.0, True), (2, 200.0, 800.0, True)]))
    assert block["input_tokens_per_output_token"] == 4.0
    assert block["input_tokens_per_output_token_source"] == "measured (load phase)"
    be = block["break_even"]
    assert be["input_tokens_per_output_token"] == 4.0
    assert be["output_tokens_per_s"] == pytest.approx(arithmetic.break_even_output_tokens_per_s(
        0.8048, 0.035, 0.14, 4.0), abs=0.1)


def test_without_input_counts_the_default_ratio_applies_and_says_so():
    block = run("e2b-emb4-g6", results())
    assert block["input_tokens_per_output_token"] == arithmetic.DEFAULT_INPUT_TOKENS_PER_OUTPUT_TOKEN
    assert block["input_tokens_per_output_token_source"].startswith("default")
    assert block["usd_per_million_output_tokens"]["slo_rate"] is None
