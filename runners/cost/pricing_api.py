"""On-Demand hourly prices from the AWS Price List API (GetProducts).

The Price List API answers only from a few regions (us-east-1, ap-south-1) and prices
every region from there: the region being priced is a filter, not the endpoint.

Each PriceList entry is a JSON *string* holding one product:
{"product": {"attributes": {...}}, "terms": {"OnDemand": {"<sku>.<offer>":
{"priceDimensions": {"<rate code>": {"unit": "Hrs", "pricePerUnit": {"USD": "0.8048000000"}}}}}}}

Bedrock is not priced here: its Price List rows name models by marketing name and
inference type ("Nova Micro", "Input tokens") with units that vary by provider, and we
have no recorded response to test a parser against. The prices file is the source of
truth for Bedrock (see docs/cost.md).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Callable

PRICING_ENDPOINT_REGIONS = ("us-east-1", "ap-south-1")
MAX_PAGES = 10  # exact filters return one or two products; more pages means a bad filter


class PricingError(RuntimeError):
    """The Price List API gave no usable price (no product, or several that disagree)."""


@dataclass(frozen=True)
class ProductQuery:
    """One GetProducts question and how to recognize the answer among the products."""

    service_code: str
    filters: dict[str, str]
    usagetype_re: re.Pattern[str]  # picks the hourly usage type among matching products
    what: str  # for messages: "EC2 g6.xlarge in us-east-2"

    def request(self) -> dict[str, Any]:
        return {
            "ServiceCode": self.service_code,
            "FormatVersion": "aws_v1",
            "Filters": [{"Type": "TERM_MATCH", "Field": k, "Value": v}
                        for k, v in self.filters.items()],
        }


def ec2_query(region: str, instance_type: str) -> ProductQuery:
    """EC2 On-Demand, Linux, shared tenancy, no pre-installed software, no license."""
    return ProductQuery(
        service_code="AmazonEC2",
        filters={
            "regionCode": region,
            "instanceType": instance_type,
            "operatingSystem": "Linux",
            "tenancy": "Shared",
            "preInstalledSw": "NA",
            "capacitystatus": "Used",  # not the reservation / capacity-block rows
            "licenseModel": "No License required",
        },
        # us-east-1 has no region prefix ("BoxUsage:g6.xlarge"); others do ("USE2-BoxUsage:").
        usagetype_re=re.compile(rf"(^|-)BoxUsage:{re.escape(instance_type)}$"),
        what=f"EC2 {instance_type} in {region}",
    )


def sagemaker_query(region: str, instance_type: str) -> ProductQuery:
    """SageMaker real-time hosting ("USE2-Host:ml.g6.xlarge"), not training or notebooks."""
    return ProductQuery(
        service_code="AmazonSageMaker",
        filters={"regionCode": region, "instanceName": instance_type, "component": "Hosting"},
        usagetype_re=re.compile(rf"(^|-)Host:{re.escape(instance_type)}$"),
        what=f"SageMaker hosting {instance_type} in {region}",
    )


def _hourly_usd(price_item: dict[str, Any]) -> list[float]:
    """Every positive USD-per-hour rate in one product's On-Demand terms."""
    rates = []
    for term in price_item.get("terms", {}).get("OnDemand", {}).values():
        for dimension in term.get("priceDimensions", {}).values():
            usd = dimension.get("pricePerUnit", {}).get("USD")
            if dimension.get("unit") == "Hrs" and usd is not None and float(usd) > 0:
                rates.append(float(usd))
    return rates


def usd_per_hour_from_price_list(query: ProductQuery, price_list: list[str]) -> float:
    """The one hourly price among `price_list` products whose usage type fits the query."""
    found: dict[str, list[float]] = {}
    for entry in price_list:
        item = json.loads(entry)
        attributes = item.get("product", {}).get("attributes", {})
        if query.usagetype_re.search(attributes.get("usagetype", "")):
            found.setdefault(item["product"].get("sku", "?"), []).extend(_hourly_usd(item))
    prices = sorted({rate for rates in found.values() for rate in rates})
    if not prices:
        raise PricingError(f"Price List API has no On-Demand hourly price for {query.what} "
                           f"({len(price_list)} products matched the filters)")
    if len(prices) > 1:
        raise PricingError(f"Price List API has {len(prices)} different hourly prices for "
                           f"{query.what}: {prices} (SKUs {sorted(found)})")
    return prices[0]


def fetch_usd_per_hour(client, query: ProductQuery) -> float:
    """Ask GetProducts (following NextToken, bounded) and pick the hourly price."""
    price_list: list[str] = []
    request = query.request()
    for _ in range(MAX_PAGES):
        page = client.get_products(**request)
        price_list.extend(page.get("PriceList", []))
        if not page.get("NextToken"):
            return usd_per_hour_from_price_list(query, price_list)
        request["NextToken"] = page["NextToken"]
    raise PricingError(f"Price List API returned more than {MAX_PAGES} pages for {query.what}; "
                       "the filters are too loose")


def default_client_factory() -> Callable[[str], Any]:
    """boto3 Pricing clients, one per endpoint region; imported late so that offline use
    (prices file only) never needs boto3 configured."""
    import boto3

    return lambda endpoint_region: boto3.client("pricing", region_name=endpoint_region)
