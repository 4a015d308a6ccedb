"""Exactly `concurrency` requests in flight for `duration_s`: each of c workers starts a
new request the moment its last one ends (closed loop), so the server sees a steady load
rather than bursts that drain. Requests started in the warm-up or cool-down window are
sent and recorded but cut from the figures (runners/measure/load/level.py)."""

from __future__ import annotations

import itertools
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from runners.backends.reply import Ask, Reply
from runners.measure.load import level
from runners.measure.load.burst import LEAD_S, sleep_until


def run_level(rec, ask: Callable[[int], Ask], concurrency: int, window: level.Window,
              pool: ThreadPoolExecutor, slo=None, **extra: Any
              ) -> tuple[dict[str, Any], list[Reply]]:
    """(figures, replies) of one level."""
    rec.client.prepare(concurrency)
    numbers = itertools.count()  # next() on a count is atomic under the GIL
    stop_s = window.start_s + window.duration_s

    def worker(_: int) -> list[Reply]:
        sleep_until(window.start_s)
        mine: list[Reply] = []
        intended = window.start_s
        while intended < stop_s:
            mine.append(rec.send(ask(next(numbers)), intended_s=intended,
                                 concurrency=concurrency, window=window.part(intended),
                                 **extra))
            intended = time.perf_counter()
        return mine

    replies = [r for mine in pool.map(worker, range(concurrency)) for r in mine]
    figures = level.figures(replies, window, prompt_tokens=extra.get("prompt_tokens_asked"),
                            slo=slo)
    return {"mode": "concurrency", "concurrency": concurrency,
            "duration_s": window.duration_s, **figures}, replies


def window_from_now(plan) -> level.Window:
    return level.Window(time.perf_counter() + LEAD_S, plan.load_duration_s,
                        plan.load_warmup_s, plan.load_cooldown_s)
