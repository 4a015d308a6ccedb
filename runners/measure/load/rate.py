"""Open-loop arrivals at `rate` requests/s for `duration_s`, as vLLM `bench serve`
schedules them: gaps drawn from a gamma distribution with shape `burstiness` and scale
1 / (rate * burstiness), so the mean gap is 1 / rate whatever the burstiness; shape 1 is
exponential (Poisson arrivals), below 1 burstier, above 1 steadier. `constant` sends
every 1 / rate s. Unlike vLLM, the gaps are not rescaled to a fixed total: a level is
bounded by time, and its request count is what the process drew (vllm/benchmarks/serve.py
get_request).

A send never waits for replies: the dispatcher hands each arrival to a pool of
`max_in_flight` threads and moves on. Each request is timed from its intended send time,
so a client that falls behind shows as latency and as `scheduling_lag_s`, and a pool that
is full shows as `rate_shortfall`, never as a faster server.
"""

from __future__ import annotations

import itertools
import math
import random
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from runners.backends.reply import Ask, Reply
from runners.measure.load import level
from runners.measure.load.burst import LEAD_S, sleep_until


def gaps_s(rate: float, count: int, arrival: str, burstiness: float,
           rng: random.Random) -> list[float]:
    """`count` gaps between sends, in seconds."""
    if arrival == "constant":
        return [1.0 / rate] * count
    return [rng.gammavariate(burstiness, 1.0 / (rate * burstiness)) for _ in range(count)]


def arrival_offsets_s(rate: float, duration_s: float, arrival: str, burstiness: float,
                      seed: int) -> list[float]:
    """Send times from the level's start, first at 0, all before `duration_s`."""
    if arrival == "constant":  # i / rate, not a running sum: no drift over many gaps
        return [i / rate for i in range(math.ceil(duration_s * rate - 1e-9))]
    rng = random.Random(seed)
    offsets, t = [], 0.0
    while t < duration_s:
        offsets.append(t)
        t += gaps_s(rate, 1, arrival, burstiness, rng)[0]
    return offsets


def run_level(rec, ask: Callable[[int], Ask], rate: float, window: level.Window,
              pool: ThreadPoolExecutor, *, arrival: str, burstiness: float, seed: int,
              offsets_s: list[float] | None = None, slo=None, **extra: Any
              ) -> tuple[dict[str, Any], list[Reply]]:
    """(figures, replies) of one level; `offsets_s` overrides the drawn arrivals (a
    scale-out shard sends its share)."""
    offsets = offsets_s if offsets_s is not None else arrival_offsets_s(
        rate, window.duration_s, arrival, burstiness, seed)
    numbers = itertools.count()

    def one(intended: float) -> Reply:
        sleep_until(intended)
        return rec.send(ask(next(numbers)), intended_s=intended, target_rate=rate,
                        window=window.part(intended), **extra)

    futures = []
    for offset in offsets:
        intended = window.start_s + offset
        sleep_until(intended - LEAD_S)  # the dispatcher only waits for the clock
        futures.append(pool.submit(one, intended))
    replies = [f.result() for f in futures]
    figures = level.figures(replies, window, prompt_tokens=extra.get("prompt_tokens_asked"),
                            target_rate=rate, slo=slo)
    return {"mode": "rate", "concurrency": None, "arrival": arrival, "burstiness": burstiness,
            "duration_s": window.duration_s, "scheduled": len(offsets), **figures}, replies
