"""The `cost` phase: turns a run's measurements and its prices into the "cost" block.

`run(context)` is what the phase list calls; `cost_block` is the same thing with plain
arguments. Nothing here raises on a missing measurement or price: the figure that
cannot be computed is null and `missing` says why, so the run's other results stand.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Callable, Mapping

from runners.cost import arithmetic
from runners.cost.prices import PriceBook

DEFAULT_BEDROCK_MODEL_ID = "amazon.nova-micro-v1:0"  # the seed's managed baseline
HOURLY_BACKENDS = {"ec2": "ec2", "sagemaker": "sagemaker"}  # backend -> price list service


def _round(value: float | None, digits: int = 6) -> float | None:
    return None if value is None else round(value, digits)


def one_request_rate(results: Mapping[str, Any]) -> tuple[float | None, str | None]:
    """Single-request output tokens/s: the decode rate (network and per-call cost
    cancelled), else the load phase's rate at concurrency 1."""
    decode = (results.get("decode") or {}).get("tokens_per_s")
    if decode:
        return decode, "decode"
    for level in results.get("load") or []:
        if level.get("concurrency") == 1 and level.get("tokens_per_s"):
            return level["tokens_per_s"], "load at concurrency 1"
    return None, None


def highest_concurrency_rate(results: Mapping[str, Any]) -> tuple[float | None, int | None]:
    """Aggregate output tokens/s at the highest concurrency that produced tokens."""
    measured = [lv for lv in results.get("load") or [] if lv.get("tokens_per_s")
                and lv.get("concurrency")]
    if not measured:
        return None, None
    top = max(measured, key=lambda lv: lv["concurrency"])
    return top["tokens_per_s"], top["concurrency"]


def slo_rate(results: Mapping[str, Any]) -> tuple[float | None, float | None]:
    """(output tokens/s, requests/s) of the highest rate level that held the SLO."""
    holding = [lv for lv in results.get("load") or [] if lv.get("target_rate")
               and lv.get("output_tokens_per_s") and (lv.get("slo") or {}).get("holds")]
    if not holding:
        return None, None
    top = max(holding, key=lambda lv: lv["target_rate"])
    return top["output_tokens_per_s"], top["target_rate"]


def measured_input_per_output(results: Mapping[str, Any]) -> float | None:
    """Input tokens per output token of the plan as run: the load levels' input and
    output token rates, summed (every level sends the same prompt and reply lengths)."""
    levels = [lv for lv in results.get("load") or []
              if lv.get("input_tokens_per_s") and lv.get("output_tokens_per_s")]
    if not levels:
        return None
    return (sum(lv["input_tokens_per_s"] for lv in levels)
            / sum(lv["output_tokens_per_s"] for lv in levels))


def _parse_time(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def idle_cost(timeline: Mapping[str, Any], usd_per_hour: float | None,
              now: datetime) -> dict[str, Any]:
    """Billable time of the run: provision start to teardown finish. Before teardown has
    finished (the cost phase runs first) the end is `now` and the figure is a floor."""
    try:
        started = _parse_time(timeline.get("provision_started_at"))
        finished = _parse_time(timeline.get("teardown_finished_at"))
        minutes = arithmetic.billable_minutes(started, finished or now) if started else None
    except ValueError as exc:  # a malformed or backwards timeline: say so, keep the rest
        return {"billable_minutes": None, "usd": None, "missing": f"timeline: {exc}"}
    if started is None:
        return {"billable_minutes": None, "usd": None,
                "missing": "timeline has no provision_started_at"}
    return {
        "from": started.isoformat(),
        "to": (finished or now).isoformat(),
        "until": "teardown_finished_at" if finished else "cost phase (teardown pending; a floor)",
        "billable_minutes": _round(minutes, 2),
        "usd": _round(None if usd_per_hour is None
                      else arithmetic.usd_for_minutes(usd_per_hour, minutes), 4),
    }


def _bedrock_reference(prices: PriceBook, model_id: str, region: str,
                       input_per_output: float) -> dict[str, Any]:
    quote = prices.bedrock(model_id, region)
    block = {"model_id": quote["model_id"], "region": quote["region"],
             "usd_per_million_input_tokens": quote["usd_per_million_input_tokens"],
             "usd_per_million_output_tokens": quote["usd_per_million_output_tokens"],
             "input_tokens_per_output_token": input_per_output,
             "usd_per_million_output_tokens_with_input": None}
    if "missing" in quote:
        return block | {"missing": quote["missing"]}
    block["usd_per_million_output_tokens_with_input"] = _round(
        arithmetic.bedrock_usd_per_million_output_tokens_with_input(
            quote["usd_per_million_input_tokens"], quote["usd_per_million_output_tokens"],
            input_per_output))
    return block


def cost_block(
    experiment: Mapping[str, Any],
    results: Mapping[str, Any],
    prices: PriceBook,
    *,
    bedrock_model_id: str = DEFAULT_BEDROCK_MODEL_ID,
    input_tokens_per_output_token: float | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """The summary.json "cost" block. `experiment` is Experiment.to_dict() (or the
    manifest's snapshot); `results` is summary-shaped (placement, timeline, decode, load).
    `input_tokens_per_output_token` None: the load phase's measured ratio, else the
    default."""
    now = now or datetime.now(timezone.utc)
    ratio_source = "given"
    if input_tokens_per_output_token is None:
        input_tokens_per_output_token = measured_input_per_output(results)
        ratio_source = "measured (load phase)"
    if input_tokens_per_output_token is None:
        input_tokens_per_output_token = arithmetic.DEFAULT_INPUT_TOKENS_PER_OUTPUT_TOKEN
        ratio_source = "default (no load measurement with input tokens)"
    first_quote = len(prices.quotes)
    backend = results.get("backend") or experiment["backend"]
    placement = results.get("placement") or {}
    region = placement.get("region") or next(iter(experiment.get("regions") or ()), None)
    one_rate, one_basis = one_request_rate(results)
    top_rate, top_level = highest_concurrency_rate(results)
    slo_tokens_per_s, slo_requests_per_s = slo_rate(results)
    missing: list[str] = []
    block: dict[str, Any] = {
        "billing": "none", "usd_per_hour": None, "usd_per_month_24x7": None,
        "usd_per_month_idle": None,
        "usd_per_million_output_tokens": {
            "one_request": None, "one_request_tokens_per_s": one_rate,
            "one_request_basis": one_basis, "highest_concurrency": None,
            "highest_concurrency_level": top_level,
            "highest_concurrency_tokens_per_s": top_rate,
            "slo_rate": None, "slo_rate_requests_per_s": slo_requests_per_s,
            "slo_rate_tokens_per_s": slo_tokens_per_s,
        },
        "input_tokens_per_output_token": _round(input_tokens_per_output_token, 4),
        "input_tokens_per_output_token_source": ratio_source,
        "break_even": None, "idle": None,
    }
    per_million = block["usd_per_million_output_tokens"]

    if backend in HOURLY_BACKENDS:
        quote = prices.instance(HOURLY_BACKENDS[backend], region or "?",
                                placement.get("instance_type") or "?")
        usd_per_hour = quote["usd_per_hour"]
        block |= {"billing": "hourly", "usd_per_hour": usd_per_hour}
        if usd_per_hour is None:
            missing.append(quote["missing"])
        else:
            block["usd_per_month_24x7"] = _round(arithmetic.usd_per_month_24x7(usd_per_hour), 2)
            # An instance bills while it exists: idle costs the same as busy.
            block["usd_per_month_idle"] = block["usd_per_month_24x7"]
            for key, rate in (("one_request", one_rate), ("highest_concurrency", top_rate),
                              ("slo_rate", slo_tokens_per_s)):
                if rate:
                    per_million[key] = _round(
                        arithmetic.usd_per_million_output_tokens(usd_per_hour, rate))
            reference = _bedrock_reference(prices, bedrock_model_id, region or "?",
                                           input_tokens_per_output_token)
            block["break_even"] = reference | _break_even(usd_per_hour, reference, top_rate)
        block["idle"] = idle_cost(results.get("timeline") or {}, usd_per_hour, now)
    elif backend == "bedrock":
        model_id = (experiment.get("bedrock") or {}).get("model_id") or results["model"]["id"]
        reference = _bedrock_reference(prices, model_id, region or "?",
                                       input_tokens_per_output_token)
        block |= {"billing": "per-token", "usd_per_month_idle": 0.0, "bedrock": reference}
        output_price = reference["usd_per_million_output_tokens"]
        # Per-token billing: the price per output token does not depend on the rate.
        per_million["one_request"] = output_price if one_rate else None
        per_million["highest_concurrency"] = output_price if top_rate else None
        per_million["slo_rate"] = output_price if slo_tokens_per_s else None
        if "missing" in reference:
            missing.append(reference["missing"])
    else:
        missing.append(f"backend {backend!r} is not billed by AWS; no price applies")

    if not one_rate:
        missing.append("no single-request rate (decode or load at concurrency 1)")
    if not top_rate and any(lv.get("target_rate") for lv in results.get("load") or []):
        missing.append("the load phase ran rate levels, no concurrency level: see slo_rate "
                       "with [benchmark.slo]")
    elif not top_rate:
        missing.append("no load measurement with tokens")
    block["missing"] = missing
    block["inputs"] = prices.snapshot(since=first_quote)
    quotes = block["inputs"]["quotes"]
    if quotes:  # the run's own price (instance or model) leads; say where it came from
        block["price_source"] = {k: quotes[0].get(k) for k in ("source", "fetched_on", "age_days")}
    return block


def _break_even(usd_per_hour: float, reference: Mapping[str, Any],
                top_rate: float | None) -> dict[str, Any]:
    if "missing" in reference:
        return {"output_tokens_per_s": None}
    rate = arithmetic.break_even_output_tokens_per_s(
        usd_per_hour, reference["usd_per_million_input_tokens"],
        reference["usd_per_million_output_tokens"], reference["input_tokens_per_output_token"])
    return {"output_tokens_per_s": _round(rate, 1),
            # >1: at its measured peak the instance beats Bedrock, if kept that busy 24x7.
            "highest_measured_over_break_even": _round(top_rate / rate, 3) if top_rate else None}


def run(context: Mapping[str, Any]) -> dict[str, Any]:
    """Phase entry point. `context` keys: "experiment" (Experiment or its to_dict()),
    "results" (summary-shaped dict of the run so far), and optionally "prices"
    (a PriceBook; default PriceBook.from_environment()), "bedrock_model_id",
    "input_tokens_per_output_token", "now" (a callable returning an aware datetime)."""
    experiment = context["experiment"]
    if hasattr(experiment, "to_dict"):
        experiment = experiment.to_dict()
    now: Callable[[], datetime] = context.get("now") or (lambda: datetime.now(timezone.utc))
    return cost_block(
        experiment, context["results"], context.get("prices") or PriceBook.from_environment(),
        bedrock_model_id=context.get("bedrock_model_id") or DEFAULT_BEDROCK_MODEL_ID,
        input_tokens_per_output_token=context.get("input_tokens_per_output_token"),
        now=now(),
    )
