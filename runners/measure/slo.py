"""Service-level objectives and goodput (vLLM `bench serve --goodput`, GuideLLM's SLO
goodput): a request is good when it succeeded and each set bound holds for it (TTFT,
TPOT, E2EL, in ms); goodput is good requests per second of the level's window. A level
holds the SLO when at least `percentile`% of its requests are good, failed requests
counting as not good, which is the same as: the `percentile`-th TTFT, TPOT and E2EL are
each within their bound and the failures fit in the rest.
"""

from __future__ import annotations

from typing import Any, Callable

from runners.backends.reply import Reply
from runners.measure import stats

BOUNDS = (("ttft_ms", "TTFT"), ("tpot_ms", "TPOT"), ("e2el_ms", "E2EL"))


def request_ms(reply: Reply, tokens: int) -> dict[str, float | None]:
    """A successful reply's TTFT, TPOT and E2EL in ms (None where undefined); `tokens` is
    its output token count."""
    ttft = None if reply.first_s is None else (reply.first_s - reply.start_s) * 1000
    n = tokens
    tpot = ((reply.last_s - reply.first_s) * 1000 / (n - 1)
            if reply.first_s is not None and n > 1 else None)
    return {"ttft_ms": ttft, "tpot_ms": tpot, "e2el_ms": (reply.last_s - reply.start_s) * 1000}


def good(reply: Reply, tokens: int, slo) -> bool:
    if not reply.ok:
        return False
    got = request_ms(reply, tokens)
    for key, _ in BOUNDS:
        bound = getattr(slo, key)
        if bound is not None and (got[key] is None or got[key] > bound):
            return False
    return True


def describe(slo) -> str:
    parts = [f"{label} p{slo.percentile:g} <= {getattr(slo, key):g} ms"
             for key, label in BOUNDS if getattr(slo, key) is not None]
    return ", ".join(parts)


def level_block(measured: list[Reply], window_s: float, slo,
                count_tokens: Callable[[Reply], int]) -> dict[str, Any] | None:
    """The level's `slo` figures: share of requests meeting every bound, goodput, and
    the `percentile`-th of each bounded figure beside its bound."""
    if slo is None:
        return None
    met = sum(good(r, count_tokens(r), slo) for r in measured)
    share = met / len(measured) if measured else None
    values = [request_ms(r, count_tokens(r)) for r in measured if r.ok]
    bounds = {}
    for key, _ in BOUNDS:
        bound = getattr(slo, key)
        if bound is None:
            continue
        seen = [v[key] for v in values if v[key] is not None]
        bounds[key] = {"bound": bound, "value": stats.percentile(seen, slo.percentile)
                       if seen else None}
    return {"share_meeting": share, "met": met, "n": len(measured),
            "goodput_requests_per_s": met / window_s if window_s > 0 else None,
            "holds": share is not None and share >= slo.percentile / 100, "bounds": bounds}


def phase_block(levels: list[dict[str, Any]], slo) -> dict[str, Any] | None:
    """The load phase's `slo`: the bounds and the highest level that holds them."""
    if slo is None:
        return None
    holding = [lvl for lvl in levels if (lvl.get("slo") or {}).get("holds")]
    rates = [lvl["target_rate"] for lvl in holding if lvl.get("target_rate")]
    conc = [lvl["concurrency"] for lvl in holding if lvl.get("concurrency")]
    return {"ttft_ms": slo.ttft_ms, "tpot_ms": slo.tpot_ms, "e2el_ms": slo.e2el_ms,
            "percentile": slo.percentile, "description": describe(slo),
            "highest_rate_holding": max(rates, default=None),
            "highest_concurrency_holding": max(conc, default=None),
            "levels_holding": len(holding)}
