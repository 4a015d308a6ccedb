"""Price quotes: API first, cache, and the prices file when offline, always with a date."""

import json
from datetime import timedelta

import pytest
from botocore.exceptions import EndpointConnectionError

from runners.cost import prices as p
from tests.cost.conftest import RUN_DAY, recorded

SEED_FILE = p.PRICES_DIR / "prices-2026-10-12.json"


def book(**kwargs) -> p.PriceBook:
    return p.PriceBook(p.PricesFile(SEED_FILE), now=lambda: RUN_DAY, **kwargs)


def test_the_checked_in_file_holds_the_seed_figures():
    prices_file = p.PricesFile(SEED_FILE)
    assert prices_file.fetched_on.isoformat() == "2026-10-12"
    assert prices_file.hourly[("ec2", "us-east-2", "g6.xlarge")] == 0.8048
    assert prices_file.hourly[("sagemaker", "us-east-2", "ml.g6.xlarge")] == 1.1267
    assert prices_file.hourly[("ec2", "us-east-1", "g5g.2xlarge")] == 0.556
    assert prices_file.hourly[("ec2", "us-east-2", "inf2.xlarge")] == 0.7582
    assert prices_file.hourly[("ec2", "us-east-2", "trn1.2xlarge")] == 1.3438
    assert prices_file.bedrock[("us-east-1", "amazon.nova-micro-v1:0")] == {
        "usd_per_million_input_tokens": 0.035, "usd_per_million_output_tokens": 0.14}
    assert p.newest_prices_file() == SEED_FILE


def test_offline_uses_the_prices_file_and_states_its_age():
    quote = book(use_api=False).instance("ec2", "us-east-2", "g6.xlarge")
    assert quote["usd_per_hour"] == 0.8048
    assert quote["source"] == "prices-file"
    assert quote["file"] == "prices-2026-10-12.json"
    assert quote["fetched_on"] == "2026-10-12"
    assert quote["age_days"] == 52
    assert "missing" not in quote


def test_api_answer_is_used_then_cached_with_its_date(pricing_client, tmp_path):
    pricing_client.stubber.add_response("get_products", recorded("ec2-g6.xlarge-us-east-2.json"))
    cache = tmp_path / "prices.json"
    first = book(client_factory=lambda _: pricing_client, cache_path=cache)
    quote = first.instance("ec2", "us-east-2", "g6.xlarge")
    assert (quote["source"], quote["usd_per_hour"], quote["fetched_on"], quote["age_days"]) == (
        "pricing-api", 0.8048, "2026-12-03", 0)
    assert json.loads(cache.read_text()) == {
        "ec2/us-east-2/g6.xlarge": {"usd_per_hour": 0.8048, "fetched_on": "2026-12-03"}}
    # A second book reads the cache and asks nothing (the stub has no response left).
    later = p.PriceBook(p.PricesFile(SEED_FILE), client_factory=lambda _: pricing_client,
                        cache_path=cache, now=lambda: RUN_DAY + timedelta(days=3))
    cached = later.instance("ec2", "us-east-2", "g6.xlarge")
    assert (cached["source"], cached["usd_per_hour"], cached["age_days"]) == (
        "pricing-api-cache", 0.8048, 3)


def test_a_stale_cache_is_asked_again(pricing_client, tmp_path):
    cache = tmp_path / "prices.json"
    cache.write_text(json.dumps({"ec2/us-east-2/g6.xlarge": {"usd_per_hour": 0.5,
                                                             "fetched_on": "2026-11-01"}}))
    pricing_client.stubber.add_response("get_products", recorded("ec2-g6.xlarge-us-east-2.json"))
    quote = book(client_factory=lambda _: pricing_client, cache_path=cache).instance(
        "ec2", "us-east-2", "g6.xlarge")
    assert (quote["source"], quote["usd_per_hour"]) == ("pricing-api", 0.8048)


def test_a_torn_cache_entry_is_ignored(tmp_path):
    cache = tmp_path / "prices.json"
    cache.write_text(json.dumps({"ec2/us-east-2/g6.xlarge": {"usd_per_hour": 0.5}}))
    quote = book(use_api=False, cache_path=cache).instance("ec2", "us-east-2", "g6.xlarge")
    assert (quote["source"], quote["usd_per_hour"]) == ("prices-file", 0.8048)


def test_api_error_falls_back_to_the_file_and_says_why(pricing_client):
    pricing_client.stubber.add_client_error("get_products", "AccessDeniedException",
                                            "not authorized to perform pricing:GetProducts")
    quote = book(client_factory=lambda _: pricing_client).instance("sagemaker", "us-east-2",
                                                                   "ml.g6.xlarge")
    assert (quote["source"], quote["usd_per_hour"], quote["age_days"]) == ("prices-file", 1.1267, 52)
    assert "AccessDeniedException" in quote["api"]


def test_no_credentials_is_offline_not_a_crash(monkeypatch, tmp_path):
    # The real default client, with every credential source switched off: botocore
    # refuses to sign before anything is sent.
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    quote = book().instance("ec2", "us-east-2", "g6.xlarge")
    assert (quote["source"], quote["usd_per_hour"]) == ("prices-file", 0.8048)
    assert "Unable to locate credentials" in quote["api"]


def test_second_pricing_endpoint_is_tried_when_the_first_is_unreachable(pricing_client):
    class Unreachable:
        def get_products(self, **_):
            raise EndpointConnectionError(endpoint_url="https://api.pricing.us-east-1.amazonaws.com")

    pricing_client.stubber.add_response("get_products", recorded("ec2-g6.xlarge-us-east-2.json"))
    asked = []

    def factory(endpoint_region):
        asked.append(endpoint_region)
        return Unreachable() if endpoint_region == "us-east-1" else pricing_client

    quote = book(client_factory=factory).instance("ec2", "us-east-2", "g6.xlarge")
    assert asked == ["us-east-1", "ap-south-1"]
    assert quote["source"] == "pricing-api"


def test_unknown_price_is_null_with_a_reason():
    quote = book(use_api=False).instance("ec2", "eu-west-1", "g6.xlarge")
    assert quote["usd_per_hour"] is None
    assert quote["missing"] == ("no price for ec2 g6.xlarge in eu-west-1: Price List API not "
                                "asked (offline); not in prices-2026-10-12.json")


def test_bedrock_profile_id_and_region_fallback():
    quote = book().bedrock("us.amazon.nova-micro-v1:0", "us-east-2")
    assert quote["model_id"] == "amazon.nova-micro-v1:0"
    assert (quote["region"], quote["requested_region"]) == ("us-east-1", "us-east-2")
    assert (quote["usd_per_million_input_tokens"], quote["usd_per_million_output_tokens"]) == (
        0.035, 0.14)
    assert quote["age_days"] == 52


def test_snapshot_keeps_every_quote_handed_out():
    prices = book(use_api=False)
    prices.instance("ec2", "us-east-2", "g6.xlarge")
    prices.bedrock("amazon.nova-micro-v1:0", "us-east-1")
    snap = prices.snapshot()
    assert snap["taken_at"] == "2026-12-03T12:00:00+00:00"
    assert snap["prices_file"] == {"source": "prices-file", "file": "prices-2026-10-12.json",
                                   "fetched_on": "2026-10-12", "age_days": 52}
    assert [q.get("instance_type") or q.get("model_id") for q in snap["quotes"]] == [
        "g6.xlarge", "amazon.nova-micro-v1:0"]
    assert len(prices.snapshot(since=1)["quotes"]) == 1


@pytest.mark.parametrize("body, message", [
    ("{", "prices-x.json: -: not valid JSON"),
    ('{"schema": "other"}', "prices-x.json: schema: must be 'benchstack.prices/1'"),
    ('{"schema": "benchstack.prices/1", "fetched_on": "Oct 12"}',
     "prices-x.json: fetched_on: 'Oct 12' is not a date YYYY-MM-DD"),
    ('{"schema": "benchstack.prices/1", "fetched_on": "2026-10-12", "ec2": {"us-east-2": '
     '{"g6.xlarge": "0.8"}}}', "prices-x.json: ec2.us-east-2.g6.xlarge: '0.8' is not a positive"),
    ('{"schema": "benchstack.prices/1", "fetched_on": "2026-10-12", "ec2": []}',
     "prices-x.json: ec2: must be a JSON object"),
])
def test_a_bad_prices_file_is_one_clear_line(tmp_path, body, message):
    path = tmp_path / "prices-x.json"
    path.write_text(body)
    with pytest.raises(p.PricesFileError) as caught:
        p.PricesFile(path)
    assert str(caught.value).startswith(str(tmp_path) + "/" + message)
    assert "\n" not in str(caught.value)
