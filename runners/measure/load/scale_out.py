"""Scale-out: a rate level above what one runner sustains (`runner_max_rate`, measured by
benchmarks/harness_accuracy.py --capacity) is sent by K = ceil(rate / runner_max_rate)
runner invocations at once, and their records are merged into the one level.

The cloud workflow asks `plan` for the shards (step "load_scale_out"), runs them as a
Step Functions Map (each item one invocation of step "load_shard"), then the load phase
merges each scaled level from the shards' files instead of sending it itself. Every shard
of a level starts at the same wall-clock instant (`start_epoch`) and sends the arrivals
of the level's one seeded schedule whose index is k modulo K, so the merged level is the
schedule a single runner would have sent. Shards write their replies' times as epoch
seconds (each Lambda's clock is NTP-disciplined; the merge reads them on one time axis).

A level without shard files (the local driver, or a Map that failed) is sent by the load
phase itself and says so.
"""

from __future__ import annotations

import math
import time
from typing import Any

from runners.backends.reply import WALL_OFFSET_S, Reply
from runners.measure.load import level
from runners.measure.load import rate as load_rate

LEAD_S = 30.0  # from planning to the first shared start: the shards' cold starts fit
GAP_S = 5.0  # between one scaled level's end and the next one's start
BUDGET_S = 780.0  # a shard must finish inside its invocation (execution.py: 840 s)
# An inline Map runs at most 40 iterations at once ("Map state in Inline mode", Step
# Functions developer guide); every shard must be running at its start instant.
MAX_SHARDS = 40


def shard_key(level_index: int, shard: int) -> str:
    """Where a shard writes its replies in the run folder."""
    return f"load/shard-{level_index}-{shard}.json"


def shard_records_key(level_index: int, shard: int) -> str:
    """Its request records, joined into requests.jsonl by the report."""
    return f"requests/load.shard-{level_index}-{shard}.jsonl"


def shards_for(rate: float, runner_max_rate: float | None) -> int:
    if not runner_max_rate or rate <= runner_max_rate:
        return 1
    return math.ceil(rate / runner_max_rate)


def plan(plan_, now_epoch: float) -> dict[str, Any]:
    """{"enabled", "items": [{"level", "rate", "shard", "shards", "start_epoch"}]}."""
    if plan_.load_mode != "rate" or plan_.sweep or not plan_.runner_max_rate:
        return {"enabled": False, "items": []}
    items, start = [], now_epoch + LEAD_S
    for i, rate in enumerate(plan_.rates):
        shards = shards_for(rate, plan_.runner_max_rate)
        if shards == 1:
            continue
        items += [{"level": i, "rate": rate, "shard": k, "shards": shards,
                   "start_epoch": round(start, 3)} for k in range(shards)]
        start += plan_.load_duration_s + GAP_S
    if len(items) > MAX_SHARDS:
        raise ValueError(f"{len(items)} shards over all scaled-out levels; an inline Map "
                         f"runs {MAX_SHARDS} at once: fewer or lower rates, or a higher "
                         "runner_max_rate")
    if start - GAP_S - now_epoch > BUDGET_S:
        raise ValueError(f"scaled-out levels need {start - GAP_S - now_epoch:.0f} s from the "
                         f"plan, more than one runner invocation's {BUDGET_S:.0f} s: fewer "
                         "rates above runner_max_rate, or a shorter load_duration_s")
    return {"enabled": bool(items), "items": items}


def shard_offsets_s(plan_, level_index: int, rate: float, shard: int, shards: int
                    ) -> list[float]:
    offsets = load_rate.arrival_offsets_s(rate, plan_.load_duration_s, plan_.arrival,
                                          plan_.burstiness, plan_.seed + level_index)
    return offsets[shard::shards]


def epoch(t_s: float | None) -> float | None:
    return None if t_s is None else t_s + WALL_OFFSET_S


def reply_times(reply: Reply) -> dict[str, Any]:
    """A reply as the merge needs it, on the epoch axis."""
    return {"status": reply.status, "error": reply.error, "intended": epoch(reply.intended_s),
            "send": epoch(reply.send_s), "first": epoch(reply.first_s),
            "last": epoch(reply.last_s), "chunks": [round(epoch(t), 6) for t in reply.chunk_s],
            "prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
            "usage_source": reply.usage_source}


def from_times(row: dict[str, Any]) -> Reply:
    return Reply(status=row["status"], error=row["error"], intended_s=row["intended"],
                 send_s=row["send"], first_s=row["first"], last_s=row["last"],
                 chunk_s=row["chunks"], prompt_tokens=row["prompt_tokens"],
                 completion_tokens=row["completion_tokens"], usage_source=row["usage_source"])


def window_at(plan_, start_epoch: float, *, perf: bool) -> level.Window:
    """The level's window from its shared start: on this process's perf_counter axis
    (to send) or on the epoch axis (to merge)."""
    start = start_epoch - (time.time() - time.perf_counter()) if perf else start_epoch
    return level.Window(start, plan_.load_duration_s, plan_.load_warmup_s, plan_.load_cooldown_s)


def merge(plan_, level_index: int, rate: float, shard_files: list[dict[str, Any]]
          ) -> dict[str, Any]:
    """One level's figures from all its shards' files."""
    replies = [from_times(row) for f in shard_files for row in f["replies"]]
    window = window_at(plan_, shard_files[0]["start_epoch"], perf=False)
    figures = level.figures(replies, window, prompt_tokens=plan_.prompt_tokens,
                            target_rate=rate, slo=plan_.slo)
    return {"mode": "rate", "concurrency": None, "arrival": plan_.arrival,
            "burstiness": plan_.burstiness, "duration_s": plan_.load_duration_s,
            "scheduled": sum(f["scheduled"] for f in shard_files),
            "shards": len(shard_files), **figures}
