"""The figures of one load level, whatever profile sent it.

A level runs from `start_s` for `duration_s`; its measured window cuts `warmup_s` from the
start and `cooldown_s` from the end, so the ramp and the drain stay out of the figures
(burst levels cut nothing: the seeds' figures include each batch's tail). Requests belong
to the window their intended send time falls in. Latencies are those of the window's
successful requests; rates divide by the window's length: requests/s counts the requests
that ended inside it, sent/s those actually sent inside it (what the shortfall against a
target rate compares), output tokens/s the tokens that arrived inside it (a reply's tokens
spread evenly over its chunks), input tokens/s the prompts of the window's requests.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from runners.backends.reply import DEGENERATE, ERROR, THROTTLED, TIMEOUT, Reply
from runners.measure import slo as slo_figures
from runners.measure import stats

WARMUP, MEASURED, COOLDOWN = "warmup", "measured", "cooldown"


@dataclass(frozen=True)
class Window:
    start_s: float  # perf_counter seconds
    duration_s: float
    warmup_s: float = 0.0
    cooldown_s: float = 0.0

    @property
    def begin_s(self) -> float:
        return self.start_s + self.warmup_s

    @property
    def end_s(self) -> float:
        return self.start_s + self.duration_s - self.cooldown_s

    @property
    def seconds(self) -> float:
        return self.end_s - self.begin_s

    def part(self, t_s: float) -> str:
        if t_s < self.begin_s:
            return WARMUP
        return MEASURED if t_s < self.end_s else COOLDOWN


def output_tokens(reply: Reply) -> int:
    """The server's count; without usage, one token per streamed content chunk."""
    return reply.completion_tokens if reply.completion_tokens is not None else len(reply.chunk_s)


def tokens_inside(reply: Reply, window: Window) -> float:
    """Output tokens of `reply` that arrived inside the window."""
    if not reply.ok or not reply.chunk_s:
        return 0.0
    inside = sum(window.begin_s <= t < window.end_s for t in reply.chunk_s)
    return output_tokens(reply) * inside / len(reply.chunk_s)


def counts(replies: list[Reply]) -> dict[str, int]:
    return {"requests": len(replies), "ok": sum(r.ok for r in replies),
            "errors": sum(r.status in (ERROR, TIMEOUT) for r in replies),
            "timeouts": sum(r.status == TIMEOUT for r in replies),
            "throttles": sum(r.status == THROTTLED for r in replies),
            "degenerate": sum(r.status == DEGENERATE for r in replies)}


def latencies(good: list[Reply]) -> dict[str, Any]:
    """TTFT, TPOT, ITL and E2EL (vLLM bench serve definitions), each with n."""
    ttft, tpot, itl, e2el = [], [], [], []
    for r in good:
        e2el.append(r.last_s - r.start_s)
        if r.first_s is None:
            continue
        ttft.append(r.first_s - r.start_s)
        itl += [b - a for a, b in zip(r.chunk_s, r.chunk_s[1:])]
        n = output_tokens(r)
        if n > 1:
            tpot.append((r.last_s - r.first_s) / (n - 1))
    return {"ttft_s": stats.distribution(ttft), "tpot_s": stats.distribution(tpot),
            "itl_s": stats.distribution(itl), "e2el_s": stats.distribution(e2el)}


def figures(replies: list[Reply], window: Window, *, prompt_tokens: int | None = None,
            target_rate: float | None = None, slo=None) -> dict[str, Any]:
    """Every level's figures. `prompt_tokens`: the asked length, for input tokens/s when
    the server reports no usage; `target_rate`: requests/s the profile aimed at; `slo`:
    the plan's [benchmark.slo], for share meeting it and goodput (runners/measure/slo.py)."""

    measured = [r for r in replies if window.part(r.start_s) == MEASURED]
    good = [r for r in measured if r.ok]
    seconds = window.seconds
    out_tokens = sum(tokens_inside(r, window) for r in replies)
    in_tokens = sum(r.prompt_tokens if r.prompt_tokens is not None else (prompt_tokens or 0)
                    for r in good)
    lag = [r.send_s - r.intended_s for r in measured if r.intended_s is not None]

    def inside(t_s: float) -> bool:
        return window.begin_s <= t_s < window.end_s

    requests_per_s = sum(inside(r.last_s) for r in replies) / seconds if seconds > 0 else None
    sent_per_s = sum(inside(r.send_s) for r in replies) / seconds if seconds > 0 else None
    result: dict[str, Any] = {
        "window_s": seconds, "cut_requests": len(replies) - len(measured), **counts(measured),
        "requests_per_s": requests_per_s, "sent_per_s": sent_per_s,
        "output_tokens": round(out_tokens, 3),
        "output_tokens_per_s": out_tokens / seconds if good and seconds > 0 else None,
        "input_tokens_per_s": in_tokens / seconds if good and seconds > 0 else None,
        "usage_missing": sum(r.usage_source == "missing" for r in good),
        **latencies(good),
        "scheduling_lag_s": stats.distribution(lag),
        "target_rate": target_rate,
        # How far the sends fell behind the profile's aim: 0.02 = 2% fewer than asked.
        "rate_shortfall": (1 - sent_per_s / target_rate)
        if target_rate and sent_per_s is not None else None,
        "errors_seen": sorted({r.error for r in replies if r.error})[:5],
        "slo": slo_figures.level_block(measured, seconds, slo, output_tokens),
    }
    result["total_tokens_per_s"] = (result["output_tokens_per_s"] + result["input_tokens_per_s"]
                                    if result["output_tokens_per_s"] is not None else None)
    # The names earlier summaries and the cost phase read.
    result["tokens_per_s"] = result["output_tokens_per_s"]
    result["latency_s"] = result["e2el_s"]
    return result
