"""The measuring phases: warmup, decode, stream, load, quality, toolcall.

Each takes a Run and a backend client and returns its JSON-ready result; phases.py writes
it before the phase returns. Failed replies (errors, throttles, timeouts, degenerate
output) never enter a latency or rate figure; they are counted.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from runners import progress
from runners.backends.reply import DEGENERATE, ERROR, THROTTLED, TIMEOUT, Ask, Reply
from runners.measure import quality_suite
from runners.measure import stats
from runners.measure import toolcall_check
from runners.measure.recorder import Recorder
from runners.run_context import Run
from runners.telemetry import prometheus

FORCED_PROMPT = "Write a long story about a lighthouse keeper and the sea."
TOOLCALL_MAX_TURNS = 4
LOAD_LEAD_S = 0.005  # threads are armed this long before the intended send time


def forced_ask(tokens: int, stream: bool) -> Ask:
    return Ask([{"role": "user", "content": FORCED_PROMPT}], max_tokens=tokens, stream=stream,
               force_tokens=True)


def _seconds(reply: Reply) -> float:
    return reply.last_s - reply.start_s


def output_tokens(reply: Reply) -> int:
    """The server's count; without usage, one token per streamed content chunk (what
    llama.cpp and vLLM send), which callers report as `usage_missing`."""
    return reply.completion_tokens if reply.completion_tokens is not None else len(reply.chunk_s)


def warmup(run: Run, rec: Recorder) -> dict[str, Any]:
    """Untimed: one request of every shape used later, so no timed request pays compilation."""
    plan = run.plan
    shapes = [("decode-short", forced_ask(plan.decode_lengths[0], False)),
              ("decode-long", forced_ask(plan.decode_lengths[1], False)),
              ("stream", forced_ask(plan.stream_tokens, True)),
              ("load", forced_ask(plan.load_tokens, True))]
    if plan.quality_suite != "none":
        q = quality_suite.questions()[0]
        shapes.append(("quality", Ask([{"role": "user", "content": q.prompt}],
                                      quality_suite.MAX_TOKENS)))
    if plan.toolcall_runs and rec.client.supports_tools:
        shapes.append(("toolcall", Ask([{"role": "user", "content": toolcall_check.QUESTION}],
                                       256, tools=[toolcall_check.TOOL])))
    results = []
    for i, (shape, ask) in enumerate(shapes):
        progress.emit("warmup", shape, i, len(shapes))
        reply = rec.send(ask, shape=shape)
        results.append({"shape": shape, "status": reply.status, "error": reply.error,
                        "seconds": round(_seconds(reply), 4)})
    return {"shapes": results, "failed": sum(r["status"] != "ok" for r in results)}


def decode(run: Run, rec: Recorder) -> dict[str, Any]:
    """Fixed short and long replies, order alternating; rate from the difference of medians."""
    short, long = run.plan.decode_lengths
    repeats = run.plan.decode_repeats
    samples: list[dict[str, Any]] = []
    times: dict[int, list[float]] = {short: [], long: []}
    verified = True
    for i in range(repeats):
        for tokens in ((short, long) if i % 2 == 0 else (long, short)):
            progress.emit("decode", f"{tokens} tokens", len(samples), 2 * repeats)
            reply = rec.send(forced_ask(tokens, False), repeat=i)
            samples.append({"tokens_requested": tokens, "completion_tokens": reply.completion_tokens,
                            "usage_source": reply.usage_source, "status": reply.status,
                            "error": reply.error, "seconds": _seconds(reply)})
            if reply.ok:
                times[tokens].append(_seconds(reply))
                verified &= reply.completion_tokens == tokens
    result: dict[str, Any] = {"short_tokens": short, "long_tokens": long, "repeats": repeats,
                              "samples": samples, "tokens_per_s": None, "intercept_s": None,
                              "tokens_verified": verified and all(times.values()),
                              "median_short_s": None, "median_long_s": None, "note": None}
    if any(s["usage_source"] == "missing" and s["status"] == "ok" for s in samples):
        result["tokens_verified"] = False
        result["note"] = "server sent no usage: reply lengths unverified"
    elif not result["tokens_verified"] and all(times.values()):
        result["note"] = "some replies did not have the requested length (engine ignored the "\
                         "forced length?): the rate assumes they did"
    if not all(times.values()):
        result["note"] = "no successful reply at one of the lengths: no rate"
        return result
    result["median_short_s"] = stats.percentile(times[short], 50)
    result["median_long_s"] = stats.percentile(times[long], 50)
    try:
        result["tokens_per_s"], result["intercept_s"] = stats.decode_fit(
            short, long, times[short], times[long])
    except ValueError as exc:
        result["note"] = str(exc)
        return result
    if result["intercept_s"] < 0:
        result["note"] = ("negative intercept: time per token grows with reply length (attention "
                          "over a longer context, typical on CPU), so the rate is the average "
                          "over the long reply's extra tokens")
    return result


def stream_metrics(replies: list[Reply]) -> dict[str, Any]:
    """TTFT, ITL, TPOT and end-to-end latency (vLLM bench serve definitions) of OK replies."""
    ttft, itl, tpot, e2el = [], [], [], []
    missing_usage = 0
    for reply in replies:
        if not reply.ok or reply.first_s is None:
            continue
        ttft.append(reply.first_s - reply.start_s)
        e2el.append(reply.last_s - reply.start_s)
        itl += [b - a for a, b in zip(reply.chunk_s, reply.chunk_s[1:])]
        missing_usage += reply.usage_source == "missing"
        tokens = output_tokens(reply)
        if tokens > 1:
            tpot.append((reply.last_s - reply.first_s) / (tokens - 1))
    return {"ttft_s": stats.distribution(ttft), "itl_s": stats.distribution(itl),
            "tpot_s": stats.distribution(tpot), "e2el_s": stats.distribution(e2el),
            "usage_missing": missing_usage}


def _counts(replies: list[Reply]) -> dict[str, int]:
    return {"requests": len(replies), "ok": sum(r.ok for r in replies),
            "errors": sum(r.status in (ERROR, TIMEOUT) for r in replies),
            "timeouts": sum(r.status == TIMEOUT for r in replies),
            "throttles": sum(r.status == THROTTLED for r in replies),
            "degenerate": sum(r.status == DEGENERATE for r in replies)}


def stream(run: Run, rec: Recorder) -> dict[str, Any]:
    replies = []
    for i in range(run.plan.stream_requests):
        progress.emit("stream", "", i, run.plan.stream_requests)
        replies.append(rec.send(forced_ask(run.plan.stream_tokens, True), index=i))
    return {"tokens": run.plan.stream_tokens, **_counts(replies), **stream_metrics(replies),
            "errors_seen": sorted({r.error for r in replies if r.error})[:5]}


def _sleep_until(target_s: float) -> None:
    delay = target_s - time.perf_counter()
    if delay > 0:
        time.sleep(delay)


def send_batch(rec: Recorder, ask: Ask, concurrency: int, pool: ThreadPoolExecutor,
               **extra: Any) -> tuple[float, list[Reply]]:
    """`concurrency` copies of `ask` meant to leave together: (intended send time, replies).
    Threads are armed a little ahead and sleep until the intended time."""
    intended = time.perf_counter() + LOAD_LEAD_S

    def one(_: int) -> Reply:
        _sleep_until(intended)
        return rec.send(ask, intended_s=intended, concurrency=concurrency, **extra)

    return intended, list(pool.map(one, range(concurrency)))


def load_level(rec: Recorder, ask: Ask, concurrency: int, batches: int,
               pool: ThreadPoolExecutor) -> dict[str, Any]:
    """`batches` bursts of `concurrency` requests sent together; latency counts from the
    intended send time, so a slow client shows up as latency rather than hiding."""
    rec.client.prepare(concurrency)
    replies: list[Reply] = []
    busy_s = 0.0
    for batch in range(batches):
        intended, done = send_batch(rec, ask, concurrency, pool, batch=batch)
        busy_s += max(r.last_s for r in done) - intended
        replies += done
    good = [r for r in replies if r.ok]
    tokens = sum(output_tokens(r) for r in good)
    lag = [r.send_s - r.intended_s for r in replies]
    return {"concurrency": concurrency, "batches": batches, **_counts(replies),
            "output_tokens": tokens, "seconds": busy_s,
            "tokens_per_s": tokens / busy_s if good and busy_s > 0 else None,
            "usage_missing": sum(r.usage_source == "missing" for r in good),
            "latency_s": stats.distribution(_seconds(r) for r in good),
            "ttft_s": stats.distribution(r.first_s - r.start_s for r in good if r.first_s),
            "scheduling_lag_s": stats.distribution(lag),
            "errors_seen": sorted({r.error for r in replies if r.error})[:5]}


def load(run: Run, rec: Recorder) -> dict[str, Any]:
    plan = run.plan
    ask = forced_ask(plan.load_tokens, True)
    levels = []
    with ThreadPoolExecutor(max_workers=max(plan.concurrency)) as pool:
        for i, concurrency in enumerate(plan.concurrency):
            progress.emit("load", f"concurrency {concurrency}", i, len(plan.concurrency))
            with prometheus.level_window(rec.client, levels):  # window, server figures
                levels.append(load_level(rec, ask, concurrency, plan.load_batches, pool))
    return {"tokens": plan.load_tokens, "levels": levels}


def quality(run: Run, rec: Recorder) -> dict[str, Any]:
    if run.plan.quality_suite == "none":
        return {"skipped": True, "reason": "benchmark.quality_suite = \"none\""}
    answers = []
    questions = quality_suite.questions()
    for i, q in enumerate(questions):
        progress.emit("quality", q.kind, i, len(questions))
        reply = rec.send(Ask([{"role": "user", "content": q.prompt}], quality_suite.MAX_TOKENS,
                             temperature=quality_suite.TEMPERATURE), question=i)
        answers.append({"kind": q.kind, "prompt": q.prompt, "answer": reply.text,
                        "status": reply.status, "error": reply.error,
                        "correct": reply.ok and q.correct(reply.text),
                        "correct_raw": reply.ok and q.correct_raw(reply.text)})
    by_kind: dict[str, list[int]] = {}
    for a in answers:
        by_kind.setdefault(a["kind"], [0, 0])
        by_kind[a["kind"]][0] += a["correct"]
        by_kind[a["kind"]][1] += 1
    return {"suite": "compare40", "correct": sum(a["correct"] for a in answers),
            "correct_raw": sum(a["correct_raw"] for a in answers), "total": len(answers),
            "by_kind": {k: {"correct": c, "total": t} for k, (c, t) in by_kind.items()},
            "answers": answers}


def _toolcall_run(rec: Recorder, index: int) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": toolcall_check.QUESTION}]
    filters, calls_ok, started = [], False, time.perf_counter()
    for turn in range(TOOLCALL_MAX_TURNS):
        reply = rec.send(Ask(messages, 256, tools=[toolcall_check.TOOL]), run=index, turn=turn)
        if not reply.ok:
            return {"run": index, "status": reply.status, "error": reply.error, "correct": False,
                    "filter_ok": calls_ok, "filters": filters, "answer": reply.text}
        if not reply.tool_calls:
            return {"run": index, "status": "ok", "error": None,
                    "correct": toolcall_check.answer_correct(reply.text), "filter_ok": calls_ok,
                    "filters": filters, "answer": reply.text,
                    "seconds": round(time.perf_counter() - started, 3)}
        # Content is a string, "" without text: OpenAI also takes null, llama-cpp-python
        # 0.3.36 refuses null (llama_types.py: content str) and a missing key (its template).
        messages.append({"role": "assistant", "content": reply.text, "tool_calls": [
            {"id": c.get("id") or f"call{turn}-{n}", "type": "function",
             "function": {"name": c["name"], "arguments": c["arguments"]}}
            for n, c in enumerate(reply.tool_calls)]})
        for n, call in enumerate(reply.tool_calls):
            filters.append(call["arguments"])
            calls_ok |= call["name"] == "count_ids" and toolcall_check.filter_ok(call["arguments"])
            messages.append({"role": "tool", "tool_call_id": call.get("id") or f"call{turn}-{n}",
                             "content": toolcall_check.run_tool(call["arguments"])})
    return {"run": index, "status": "error", "error": f"no answer after {TOOLCALL_MAX_TURNS} "
            "turns", "correct": False, "filter_ok": calls_ok, "filters": filters, "answer": ""}


def toolcall(run: Run, rec: Recorder) -> dict[str, Any]:
    runs = run.plan.toolcall_runs
    if runs == 0:
        return {"supported": None, "skipped": True, "reason": "benchmark.toolcall_runs = 0"}
    if not rec.client.supports_tools:
        return {"supported": False, "note": "not supported",
                "reason": f"backend {run.experiment.backend!r} as configured has no tool calls"}
    results = []
    for i in range(runs):
        progress.emit("toolcall", "", i, runs)
        results.append(_toolcall_run(rec, i))
    return {"supported": True, "runs": runs, "correct": sum(r["correct"] for r in results),
            "filter_ok": sum(r["filter_ok"] for r in results), "results": results,
            "expected": toolcall_check.EXPECTED,
            "tool": json.loads(json.dumps(toolcall_check.TOOL))}
