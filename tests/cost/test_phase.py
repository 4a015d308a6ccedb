"""The cost phase on summary-shaped results, priced offline from the seed's file."""

from datetime import timedelta

import pytest

from runners import experiment
from runners.cost import phase
from runners.cost.prices import PriceBook, PricesFile, PRICES_DIR
from tests.cost.conftest import RUN_DAY

EXPERIMENTS = PRICES_DIR.parent.parent / "experiments"


def prices() -> PriceBook:
    return PriceBook(PricesFile(PRICES_DIR / "prices-2026-10-12.json"), use_api=False,
                     now=lambda: RUN_DAY)


def results(backend="ec2", instance_type="g6.xlarge", region="us-east-2", decode=131.9,
            load=((1, 120.0), (4, 480.0), (16, 1490.0)), teardown_after_min=30.0):
    start = RUN_DAY - timedelta(hours=1)
    end = start + timedelta(minutes=teardown_after_min) if teardown_after_min else None
    return {
        "backend": backend,
        "placement": {"region": region, "az": region and region + "b", "instance_type": instance_type},
        "timeline": {"provision_started_at": start.isoformat(),
                     "teardown_finished_at": end.isoformat() if end else None},
        "decode": {"tokens_per_s": decode},
        "load": [{"concurrency": c, "tokens_per_s": t} for c, t in load],
    }


def run(name, res, **extra):
    return phase.run({"experiment": experiment.find(EXPERIMENTS, name), "results": res,
                      "prices": prices(), "now": lambda: RUN_DAY, **extra})


def test_g6_block_matches_the_seed():
    block = run("e2b-emb4-g6", results())
    assert block["billing"] == "hourly"
    assert block["usd_per_hour"] == 0.8048
    assert block["usd_per_month_24x7"] == 587.5
    assert block["usd_per_month_idle"] == 587.5
    per_million = block["usd_per_million_output_tokens"]
    assert round(per_million["one_request"], 2) == 1.69
    assert per_million["one_request_basis"] == "decode"
    assert round(per_million["highest_concurrency"], 3) == 0.150
    assert per_million["highest_concurrency_level"] == 16
    be = block["break_even"]
    assert (be["model_id"], be["input_tokens_per_output_token"]) == ("amazon.nova-micro-v1:0", 5)
    assert be["usd_per_million_output_tokens_with_input"] == pytest.approx(0.315)
    assert be["output_tokens_per_s"] == 709.7
    assert be["highest_measured_over_break_even"] == round(1490.0 / 709.7, 3)
    # 30 minutes of g6: 0.8048 / 2 = 0.4024
    assert block["idle"]["billable_minutes"] == 30.0
    assert block["idle"]["usd"] == 0.4024
    assert block["idle"]["until"] == "teardown_finished_at"
    assert block["missing"] == []
    assert block["price_source"] == {"source": "prices-file", "fetched_on": "2026-10-12",
                                     "age_days": 52}
    assert [q.get("instance_type") or q["model_id"] for q in block["inputs"]["quotes"]] == [
        "g6.xlarge", "amazon.nova-micro-v1:0"]


def test_sagemaker_block_and_a_pending_teardown_gives_a_floor():
    block = run("e2b-emb4-ml-g6", results("sagemaker", "ml.g6.xlarge", decode=96.5,
                                          teardown_after_min=None))
    assert block["usd_per_hour"] == 1.1267
    assert round(block["usd_per_month_24x7"]) == 822
    assert round(block["usd_per_million_output_tokens"]["one_request"], 2) == 3.24
    # Teardown has not finished when the cost phase runs: billed up to now (one hour).
    assert block["idle"]["billable_minutes"] == 60.0
    assert block["idle"]["usd"] == 1.1267
    assert block["idle"]["until"].startswith("cost phase")


def test_bedrock_is_per_token_and_free_when_idle():
    block = run("nova-micro-bedrock", results("bedrock", None, "us-east-1", decode=130.4))
    assert block["billing"] == "per-token"
    assert block["usd_per_hour"] is None and block["usd_per_month_idle"] == 0.0
    assert block["usd_per_million_output_tokens"]["one_request"] == 0.14
    assert block["usd_per_million_output_tokens"]["highest_concurrency"] == 0.14
    assert block["bedrock"]["usd_per_million_output_tokens_with_input"] == pytest.approx(0.315)
    assert block["break_even"] is None and block["idle"] is None


def test_input_ratio_and_baseline_model_are_parameters():
    block = run("e2b-emb4-g6", results(), input_tokens_per_output_token=0)
    assert block["break_even"]["output_tokens_per_s"] == 1596.8
    other = run("e2b-emb4-g6", results(), bedrock_model_id="amazon.nova-pro-v1:0")
    assert other["break_even"]["output_tokens_per_s"] is None
    assert other["break_even"]["missing"].startswith("no Bedrock price for amazon.nova-pro-v1:0")


def test_local_backend_has_no_price_and_says_so():
    block = run("local-gemma3-270m", results("local", None, None, decode=40.0))
    assert block["billing"] == "none"
    assert block["usd_per_million_output_tokens"]["one_request"] is None
    assert block["missing"] == ["backend 'local' is not billed by AWS; no price applies"]


def test_missing_measurements_and_prices_are_null_with_reasons():
    block = run("e2b-emb4-g6", results(region="eu-west-1", decode=None, load=((1, 0.0),)))
    assert block["usd_per_hour"] is None
    assert block["usd_per_million_output_tokens"]["one_request"] is None
    assert block["missing"] == [
        "no price for ec2 g6.xlarge in eu-west-1: Price List API not asked (offline); "
        "not in prices-2026-10-12.json",
        "no single-request rate (decode or load at concurrency 1)",
        "no load measurement with tokens",
    ]
    assert block["idle"]["billable_minutes"] == 30.0 and block["idle"]["usd"] is None


def test_without_decode_the_one_request_rate_comes_from_load():
    block = run("e2b-emb4-g6", results(decode=None))
    per_million = block["usd_per_million_output_tokens"]
    assert per_million["one_request_basis"] == "load at concurrency 1"
    assert per_million["one_request_tokens_per_s"] == 120.0


def test_a_backwards_timeline_is_reported_not_raised():
    res = results()
    res["timeline"]["teardown_finished_at"] = "2026-12-03T09:00:00+00:00"  # before provision
    block = run("e2b-emb4-g6", res)
    assert block["idle"]["billable_minutes"] is None
    assert block["idle"]["missing"].startswith("timeline: ends (2026-12-03T09:00:00+00:00) "
                                               "before it starts")
    assert block["usd_per_hour"] == 0.8048  # the rest of the block stands


def test_the_manifest_snapshot_dict_works_like_the_experiment():
    snapshot = experiment.find(EXPERIMENTS, "nova-micro-bedrock").to_dict()
    block = phase.run({"experiment": snapshot, "results": results("bedrock", None, "us-east-1"),
                       "prices": prices(), "now": lambda: RUN_DAY})
    assert block["bedrock"]["model_id"] == "amazon.nova-micro-v1:0"
    assert block["price_source"]["age_days"] == 52
