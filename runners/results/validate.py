"""Checks a summary.json before anything reads a figure from it: types, finite numbers,
and plausible ones. A summary is written by code but read from a folder anyone can edit
(or an older version wrote), so `"tokens_per_s": "fast"`, NaN or 10^12 tokens must stop
with the field named, not become a traceback, a medal or "nanx".

Plausible means: counts and times are not negative; a level's output tokens are at most
its successful requests times the tokens each was allowed (max_tokens); no rate reaches
MAX_TOKENS_PER_S; correct answers are at most the questions asked.
"""

from __future__ import annotations

import math
from typing import Any

MAX_TOKENS_PER_S = 1e6  # far above any single endpoint: 10^6 tok/s means a corrupt count
DIST_KEYS = ("p50", "p90", "p99", "mean")


class SummaryInvalid(ValueError):
    """`field`: what is wrong; the caller adds the file."""

    def __init__(self, field: str, problem: str):
        super().__init__(f"{field}: {problem}")
        self.field, self.problem = field, problem


def _number(value: Any, field: str, *, maximum: float | None = None) -> float | None:
    """None, or a finite non-negative int/float (never a bool or a string)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SummaryInvalid(field, f"must be a number, not {value!r}")
    if not math.isfinite(value):
        raise SummaryInvalid(field, f"must be finite, not {value!r}")
    if value < 0:
        raise SummaryInvalid(field, f"must not be negative, not {value!r}")
    if maximum is not None and value > maximum:
        raise SummaryInvalid(field, f"{value:g} is implausible (above {maximum:g})")
    return value


def _count(value: Any, field: str) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise SummaryInvalid(field, f"must be a whole number, not {value!r}")
    return _number(value, field)


def _block(value: Any, field: str, kind: type = dict) -> Any:
    if value is not None and not isinstance(value, kind):
        raise SummaryInvalid(field, f"must be {'an object' if kind is dict else 'a list'}, "
                                    f"not {value!r}")
    return value if value is not None else kind()


def _dist(value: Any, field: str) -> None:
    dist = _block(value, field)
    for key in DIST_KEYS:
        _number(dist.get(key), f"{field}.{key}")
    _count(dist.get("n"), f"{field}.n")


def _interval(value: Any, field: str) -> None:
    if value is None:
        return
    if not isinstance(value, list) or len(value) != 2:
        raise SummaryInvalid(field, f"must be [low, high], not {value!r}")
    low, high = (_number(v, f"{field}[{i}]") for i, v in enumerate(value))
    if low > high:
        raise SummaryInvalid(field, f"low {low} is above high {high}")


def check_summary(summary: dict[str, Any]) -> None:
    """Raise SummaryInvalid naming the first bad field; return None when all is well."""
    for key in ("run_id", "experiment", "backend"):
        if not isinstance(summary.get(key), str) or not summary[key]:
            raise SummaryInvalid(key, f"must be a non-empty string, not {summary.get(key)!r}")
    decode = _block(summary.get("decode"), "decode")
    _number(decode.get("tokens_per_s"), "decode.tokens_per_s", maximum=MAX_TOKENS_PER_S)
    intercept = decode.get("intercept_s")  # may be negative (see runners/measure/phases.py)
    if intercept is not None and (isinstance(intercept, bool) or not isinstance(
            intercept, (int, float)) or not math.isfinite(intercept)):
        raise SummaryInvalid("decode.intercept_s", f"must be a finite number, not {intercept!r}")
    for key in ("short_tokens", "long_tokens", "repeats"):
        _count(decode.get(key), f"decode.{key}")
    _interval(decode.get("interval_95"), "decode.interval_95")
    stream = _block(summary.get("stream"), "stream")
    for key in ("ttft_s", "itl_s", "tpot_s", "e2el_s"):
        _dist(stream.get(key), f"stream.{key}")
    for i, level in enumerate(_block(summary.get("load"), "load", list)):
        _level(_block(level, f"load[{i}]"), f"load[{i}]")
    quality = _block(summary.get("quality"), "quality")
    if quality:
        total = _count(quality.get("total"), "quality.total")
        for key in ("correct", "correct_raw"):
            correct = _count(quality.get(key), f"quality.{key}")
            if correct is not None and total is not None and correct > total:
                raise SummaryInvalid(f"quality.{key}", f"{correct} is more than the {total} "
                                                       "questions asked")
        _interval(quality.get("interval_95"), "quality.interval_95")
        _block(quality.get("answers"), "quality.answers", list)
    toolcall = _block(summary.get("toolcall"), "toolcall")
    for key in ("runs", "correct", "filter_ok"):
        _count(toolcall.get(key), f"toolcall.{key}")
    _count(summary.get("degenerate_responses"), "degenerate_responses")
    memory = _block(summary.get("memory"), "memory")
    _number(memory.get("weights_gib"), "memory.weights_gib")
    _count(memory.get("kv_cache_tokens"), "memory.kv_cache_tokens")
    cost = _block(summary.get("cost"), "cost")
    _number(cost.get("usd_per_hour"), "cost.usd_per_hour")
    per_million = _block(cost.get("usd_per_million_output_tokens"),
                         "cost.usd_per_million_output_tokens")
    for key in ("one_request", "highest_concurrency"):
        _number(per_million.get(key), f"cost.usd_per_million_output_tokens.{key}")


def _level(level: dict[str, Any], field: str) -> None:
    concurrency = _count(level.get("concurrency"), f"{field}.concurrency")
    if not concurrency:
        raise SummaryInvalid(f"{field}.concurrency", "must be a whole number of at least 1")
    _number(level.get("tokens_per_s"), f"{field}.tokens_per_s", maximum=MAX_TOKENS_PER_S)
    for key in ("requests", "ok", "errors", "throttles", "output_tokens", "max_tokens"):
        _count(level.get(key), f"{field}.{key}")
    for key in ("latency_s", "ttft_s", "scheduling_lag_s"):
        _dist(level.get(key), f"{field}.{key}")
    tokens, allowed = level.get("output_tokens"), level.get("max_tokens")
    replies = level.get("ok") if level.get("ok") is not None else level.get("requests")
    if tokens is not None and allowed and replies is not None and tokens > replies * allowed:
        raise SummaryInvalid(f"{field}.output_tokens", f"{tokens} tokens from {replies} replies "
                             f"of at most {allowed} tokens each is implausible")
