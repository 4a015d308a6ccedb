"""GetProducts requests and PriceList parsing, on recorded response shapes."""

import json

import pytest

from runners.cost import pricing_api
from tests.cost.conftest import recorded

EC2_G6_REQUEST = {
    "ServiceCode": "AmazonEC2",
    "FormatVersion": "aws_v1",
    "Filters": [
        {"Type": "TERM_MATCH", "Field": "regionCode", "Value": "us-east-2"},
        {"Type": "TERM_MATCH", "Field": "instanceType", "Value": "g6.xlarge"},
        {"Type": "TERM_MATCH", "Field": "operatingSystem", "Value": "Linux"},
        {"Type": "TERM_MATCH", "Field": "tenancy", "Value": "Shared"},
        {"Type": "TERM_MATCH", "Field": "preInstalledSw", "Value": "NA"},
        {"Type": "TERM_MATCH", "Field": "capacitystatus", "Value": "Used"},
        {"Type": "TERM_MATCH", "Field": "licenseModel", "Value": "No License required"},
    ],
}


def test_ec2_on_demand_linux_price(pricing_client):
    pricing_client.stubber.add_response("get_products", recorded("ec2-g6.xlarge-us-east-2.json"),
                                        EC2_G6_REQUEST)
    query = pricing_api.ec2_query("us-east-2", "g6.xlarge")
    # The recorded product also carries a Reserved term (0.507); only OnDemand counts.
    assert pricing_api.fetch_usd_per_hour(pricing_client, query) == 0.8048


def test_ec2_us_east_1_usage_type_has_no_region_prefix(pricing_client):
    response = recorded("ec2-g5g.2xlarge-us-east-1.json")
    pricing_client.stubber.add_response("get_products", response)
    query = pricing_api.ec2_query("us-east-1", "g5g.2xlarge")
    assert pricing_api.fetch_usd_per_hour(pricing_client, query) == 0.556


def test_sagemaker_hosting_follows_next_token_and_skips_async_inference(pricing_client):
    request = {"ServiceCode": "AmazonSageMaker", "FormatVersion": "aws_v1", "Filters": [
        {"Type": "TERM_MATCH", "Field": "regionCode", "Value": "us-east-2"},
        {"Type": "TERM_MATCH", "Field": "instanceName", "Value": "ml.g6.xlarge"},
        {"Type": "TERM_MATCH", "Field": "component", "Value": "Hosting"},
    ]}
    page1 = recorded("sagemaker-ml.g6.xlarge-us-east-2.page1.json")
    pricing_client.stubber.add_response("get_products", page1, request)
    pricing_client.stubber.add_response("get_products", recorded(
        "sagemaker-ml.g6.xlarge-us-east-2.page2.json"), request | {"NextToken": page1["NextToken"]})
    query = pricing_api.sagemaker_query("us-east-2", "ml.g6.xlarge")
    assert pricing_api.fetch_usd_per_hour(pricing_client, query) == 1.1267


def test_no_product_is_a_pricing_error(pricing_client):
    pricing_client.stubber.add_response("get_products", recorded("empty.json"))
    with pytest.raises(pricing_api.PricingError, match="no On-Demand hourly price for EC2 "
                                                       "g6.xlarge in eu-west-1"):
        pricing_api.fetch_usd_per_hour(pricing_client, pricing_api.ec2_query("eu-west-1",
                                                                             "g6.xlarge"))


def test_two_disagreeing_products_are_refused_not_guessed():
    entry = json.loads(recorded("ec2-g6.xlarge-us-east-2.json")["PriceList"][0])
    other = json.loads(json.dumps(entry).replace("0.8048000000", "0.9000000000"))
    other["product"]["sku"] = "OTHERSKU"
    query = pricing_api.ec2_query("us-east-2", "g6.xlarge")
    with pytest.raises(pricing_api.PricingError, match=r"2 different hourly prices.*0\.8048, 0\.9"):
        pricing_api.usd_per_hour_from_price_list(query, [json.dumps(entry), json.dumps(other)])


def test_a_larger_type_is_not_taken_for_the_one_asked():
    # "g6.xlarge" must not match "USE2-BoxUsage:g6.12xlarge" (or "...:xg6.xlarge").
    entry = recorded("ec2-g6.xlarge-us-east-2.json")["PriceList"][0]
    query = pricing_api.ec2_query("us-east-2", "g6.12xlarge")
    with pytest.raises(pricing_api.PricingError):
        pricing_api.usd_per_hour_from_price_list(query, [entry])


def test_pages_are_bounded(pricing_client):
    page = recorded("empty.json") | {"NextToken": "again"}
    for _ in range(pricing_api.MAX_PAGES):
        pricing_client.stubber.add_response("get_products", page)
    with pytest.raises(pricing_api.PricingError, match="more than 10 pages"):
        pricing_api.fetch_usd_per_hour(pricing_client, pricing_api.ec2_query("us-east-2",
                                                                             "g6.xlarge"))
