"""The seeds' plan: `batches` bursts of `concurrency` requests sent together, the next
burst when the slowest reply of the last is back. Throughput is output tokens over the
summed batch time (intended send to last byte), each batch's draining tail included, so
the figures compare with the seeds' own."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from runners.backends.reply import Ask, Reply
from runners.measure.load import level

LEAD_S = 0.005  # threads are armed this long before the intended send time


def sleep_until(target_s: float) -> None:
    delay = target_s - time.perf_counter()
    if delay > 0:
        time.sleep(delay)


def send_batch(rec, ask: Ask | Callable[[int], Ask], concurrency: int, pool: ThreadPoolExecutor,
               **extra: Any) -> tuple[float, list[Reply]]:
    """`concurrency` requests meant to leave together: (intended send time, replies).
    `ask` is one Ask or a function of the request's index in the batch."""
    intended = time.perf_counter() + LEAD_S

    def one(i: int) -> Reply:
        sleep_until(intended)
        return rec.send(ask(i) if callable(ask) else ask, intended_s=intended,
                        concurrency=concurrency, **extra)

    return intended, list(pool.map(one, range(concurrency)))


def run_level(rec, ask: Callable[[int], Ask], concurrency: int, batches: int,
              pool: ThreadPoolExecutor, slo=None, **extra: Any
              ) -> tuple[dict[str, Any], list[Reply]]:
    """(figures, replies) of one level."""
    rec.client.prepare(concurrency)
    replies: list[Reply] = []
    busy_s = 0.0
    for batch in range(batches):
        offset = batch * concurrency
        intended, done = send_batch(rec, lambda i: ask(offset + i), concurrency, pool,
                                    batch=batch, window=level.MEASURED, **extra)
        busy_s += max(r.last_s for r in done) - intended
        replies += done
    start = min(r.start_s for r in replies)
    window = level.Window(start, max(r.last_s for r in replies) - start + 1e-9)
    figures = level.figures(replies, window, prompt_tokens=extra.get("prompt_tokens_asked"),
                            slo=slo)
    good = [r for r in replies if r.ok]
    tokens = sum(level.output_tokens(r) for r in good)
    rate = tokens / busy_s if good and busy_s > 0 else None
    figures.update({"output_tokens": tokens, "seconds": busy_s, "tokens_per_s": rate,
                    "output_tokens_per_s": rate,
                    "requests_per_s": len(replies) / busy_s if busy_s > 0 else None})
    if rate is not None and figures["input_tokens_per_s"] is not None:
        inputs = figures["input_tokens_per_s"] * window.seconds
        figures["input_tokens_per_s"] = inputs / busy_s
        figures["total_tokens_per_s"] = (inputs + tokens) / busy_s
    return {"mode": "burst", "concurrency": concurrency, "batches": batches, **figures}, replies
