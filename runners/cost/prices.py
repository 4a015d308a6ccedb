"""Where prices come from, and when: the Price List API, a local cache, a prices file.

Every price is handed out as a *quote*: the figure plus its source, the date it was
read and its age, so that each run keeps the exact inputs its cost was computed from
and a report can say how old they are.

Order of preference for an hourly price: a cached API answer younger than
`max_cache_age_days`, then the Price List API (whose answer is cached), then the newest
prices file in runners/prices/ (offline, no credentials, or a price the API lacks).
Bedrock per-token prices come from the prices file only (see pricing_api's docstring).
"""

from __future__ import annotations

import json
import os
import re
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any, Callable

from botocore.exceptions import BotoCoreError, ClientError, EndpointConnectionError

from runners.cost import pricing_api

PRICES_DIR = Path(__file__).resolve().parent.parent / "prices"
PRICES_FILE_RE = re.compile(r"^prices-(\d{4}-\d{2}-\d{2})\.json$")
PRICES_SCHEMA = "benchstack.prices/1"
DEFAULT_CACHE_PATH = Path(__file__).resolve().parents[2] / ".cache" / "prices.json"
# Bedrock cross-region inference profiles ("us.amazon.nova-micro-v1:0") bill as the model.
_PROFILE_PREFIX_RE = re.compile(r"^(us|eu|apac|jp|au|ca|us-gov|global)\.")
SERVICES = ("ec2", "sagemaker")


class PricesFileError(ValueError):
    """A prices file that cannot be used: names the file and the field."""

    def __str__(self) -> str:
        path, field, message = self.args
        return f"{path}: {field}: {message}"


def bedrock_base_model_id(model_id: str) -> str:
    """'us.amazon.nova-micro-v1:0' -> 'amazon.nova-micro-v1:0'."""
    return _PROFILE_PREFIX_RE.sub("", model_id)


def age_days(fetched_on: date, today: date) -> int:
    return (today - fetched_on).days


def _positive(path: Path, field: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise PricesFileError(str(path), field, f"{value!r} is not a positive number of USD")
    return float(value)


class PricesFile:
    """A checked-in price list: {"fetched_on", "ec2"|"sagemaker": {region: {type: usd_per_hour}},
    "bedrock": {region: {model_id: {usd_per_million_input_tokens, ..._output_tokens}}}}."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise PricesFileError(str(self.path), "-", "no such file") from None
        except json.JSONDecodeError as exc:
            raise PricesFileError(str(self.path), "-", f"not valid JSON: {exc}") from None
        if not isinstance(data, dict) or data.get("schema") != PRICES_SCHEMA:
            raise PricesFileError(str(self.path), "schema", f"must be {PRICES_SCHEMA!r}")
        try:
            self.fetched_on = date.fromisoformat(str(data.get("fetched_on")))
        except ValueError:
            raise PricesFileError(str(self.path), "fetched_on",
                                  f"{data.get('fetched_on')!r} is not a date YYYY-MM-DD") from None
        self.hourly: dict[tuple[str, str, str], float] = {}
        for service in SERVICES:
            for region, types in self._object(data.get(service, {}), service).items():
                for itype, usd in self._object(types, f"{service}.{region}").items():
                    field = f"{service}.{region}.{itype}"
                    self.hourly[(service, region, itype)] = _positive(self.path, field, usd)
        self.bedrock: dict[tuple[str, str], dict[str, float]] = {}
        for region, models in self._object(data.get("bedrock", {}), "bedrock").items():
            for model_id, prices in self._object(models, f"bedrock.{region}").items():
                prices = self._object(prices, f"bedrock.{region}.{model_id}")
                keys = ("usd_per_million_input_tokens", "usd_per_million_output_tokens")
                self.bedrock[(region, model_id)] = {
                    k: _positive(self.path, f"bedrock.{region}.{model_id}.{k}", prices.get(k))
                    for k in keys
                }

    def _object(self, value: Any, field: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise PricesFileError(str(self.path), field, "must be a JSON object")
        return value

    def provenance(self, today: date) -> dict[str, Any]:
        return {"source": "prices-file", "file": self.path.name,
                "fetched_on": self.fetched_on.isoformat(),
                "age_days": age_days(self.fetched_on, today)}


def newest_prices_file(directory: str | Path = PRICES_DIR) -> Path:
    """The prices file with the latest date in its name."""
    files = sorted(p for p in Path(directory).glob("prices-*.json") if PRICES_FILE_RE.match(p.name))
    if not files:
        raise PricesFileError(str(directory), "-", "no prices-YYYY-MM-DD.json file")
    return files[-1]


class PriceBook:
    """Hands out price quotes for one or more runs; remembers what it handed out."""

    def __init__(
        self,
        prices_file: PricesFile | None = None,
        *,
        use_api: bool = True,
        client_factory: Callable[[str], Any] | None = None,
        cache_path: str | Path | None = None,
        max_cache_age_days: int = 7,
        now: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
    ):
        self.prices_file = prices_file or PricesFile(newest_prices_file())
        self.use_api = use_api
        self.client_factory = client_factory
        self.cache_path = Path(cache_path) if cache_path else None
        self.max_cache_age_days = max_cache_age_days
        self.now = now
        self.quotes: list[dict[str, Any]] = []

    def snapshot(self, since: int = 0) -> dict[str, Any]:
        """The quotes handed out (from index `since`), with the prices file behind them:
        the cost inputs a run stores beside its cost so it can be recomputed or audited."""
        return {"taken_at": self.now().isoformat(timespec="seconds"),
                "prices_file": self.prices_file.provenance(self.now().date()),
                "quotes": self.quotes[since:]}

    def _hand_out(self, quote: dict[str, Any]) -> dict[str, Any]:
        self.quotes.append(quote)
        return quote

    @classmethod
    def from_environment(cls) -> PriceBook:
        """BENCHSTACK_PRICES=offline skips the API; BENCHSTACK_PRICES_FILE picks a prices
        file; BENCHSTACK_PRICE_CACHE moves the cache (default .cache/prices.json)."""
        file_env = os.environ.get("BENCHSTACK_PRICES_FILE")
        return cls(
            PricesFile(file_env) if file_env else None,
            use_api=os.environ.get("BENCHSTACK_PRICES", "api") != "offline",
            cache_path=os.environ.get("BENCHSTACK_PRICE_CACHE") or DEFAULT_CACHE_PATH,
        )

    # ------------------------------------------------------------ hourly prices

    def instance(self, service: str, region: str, instance_type: str) -> dict[str, Any]:
        """A quote for one instance hour: {"usd_per_hour": float|None, "source", ...}.
        usd_per_hour is None (with "missing" saying why) when no source knows the price."""
        if service not in SERVICES:
            raise ValueError(f"service must be one of {SERVICES}, got {service!r}")
        today = self.now().date()
        quote: dict[str, Any] = {"service": service, "region": region,
                                 "instance_type": instance_type}
        key = f"{service}/{region}/{instance_type}"
        cached = self._cached(key, today)
        if cached:
            return self._hand_out(quote | cached)
        api_problem = "Price List API not asked (offline)"
        if self.use_api:
            try:
                usd = self._ask_api(service, region, instance_type)
            except (BotoCoreError, ClientError, pricing_api.PricingError) as exc:
                api_problem = f"Price List API unavailable: {exc}"
            else:
                self._remember(key, usd, today)
                return self._hand_out({**quote, "usd_per_hour": usd, "source": "pricing-api",
                                       "fetched_on": today.isoformat(), "age_days": 0})
        usd = self.prices_file.hourly.get((service, region, instance_type))
        quote |= self.prices_file.provenance(today) | {"usd_per_hour": usd, "api": api_problem}
        if usd is None:
            quote["missing"] = (f"no price for {service} {instance_type} in {region}: "
                                f"{api_problem}; not in {self.prices_file.path.name}")
        return self._hand_out(quote)

    def _ask_api(self, service: str, region: str, instance_type: str) -> float:
        query = (pricing_api.ec2_query if service == "ec2" else pricing_api.sagemaker_query)(
            region, instance_type)
        factory = self.client_factory or pricing_api.default_client_factory()
        last: Exception | None = None
        for endpoint in pricing_api.PRICING_ENDPOINT_REGIONS:
            try:
                return pricing_api.fetch_usd_per_hour(factory(endpoint), query)
            except EndpointConnectionError as exc:  # try the other Price List endpoint
                last = exc
        raise last  # type: ignore[misc]

    def _cache(self) -> dict[str, Any]:
        if not self.cache_path:
            return {}
        try:
            return json.loads(self.cache_path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            return {}  # a missing or torn cache is only a slower run

    def _cached(self, key: str, today: date) -> dict[str, Any] | None:
        """The cache's answer for `key` when it is fresh enough; a torn entry is no answer."""
        try:
            entry = self._cache()[key]
            fetched_on = date.fromisoformat(entry["fetched_on"])
            usd = float(entry["usd_per_hour"])
        except (KeyError, TypeError, ValueError):
            return None
        if age_days(fetched_on, today) > self.max_cache_age_days:
            return None
        return {"usd_per_hour": usd, "source": "pricing-api-cache",
                "fetched_on": fetched_on.isoformat(), "age_days": age_days(fetched_on, today)}

    def _remember(self, key: str, usd_per_hour: float, today: date) -> None:
        if not self.cache_path:
            return
        cache = self._cache() | {key: {"usd_per_hour": usd_per_hour,
                                       "fetched_on": today.isoformat()}}
        try:
            self.cache_path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.cache_path.with_suffix(".tmp")
            tmp.write_text(json.dumps(cache, indent=1, sort_keys=True), encoding="utf-8")
            tmp.replace(self.cache_path)
        except OSError:
            pass  # read-only file system (a Lambda outside /tmp): the price is still used

    # ------------------------------------------------------------ per-token prices

    def bedrock(self, model_id: str, region: str) -> dict[str, Any]:
        """A quote for a Bedrock model's on-demand token prices, from the prices file.
        When the file lacks `region` but prices the model elsewhere, that price is used
        and the quote says which region it is from."""
        base = bedrock_base_model_id(model_id)
        today = self.now().date()
        quote: dict[str, Any] = {"model_id": base, "requested_region": region}
        quote |= self.prices_file.provenance(today)
        regions = [region] + sorted(r for (r, m) in self.prices_file.bedrock if m == base)
        for candidate in regions:
            prices = self.prices_file.bedrock.get((candidate, base))
            if prices:
                return self._hand_out(quote | {"region": candidate, **prices})
        return self._hand_out(quote | {"region": region, "usd_per_million_input_tokens": None,
                        "usd_per_million_output_tokens": None,
                        "missing": f"no Bedrock price for {base} in {self.prices_file.path.name}"})
