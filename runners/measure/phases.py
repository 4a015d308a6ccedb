"""The measuring phases: warmup, decode, stream, load, quality, toolcall.

Each takes a Run and a backend client and returns its JSON-ready result; phases.py writes
it before the phase returns. Failed replies (errors, throttles, timeouts, degenerate
output) never enter a latency or rate figure; they are counted.
"""

from __future__ import annotations

import itertools
import json
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from runners import progress
from runners.backends.reply import Ask, Reply
from runners.measure import datasets, prompts, quality_suite, slo
from runners.measure import stats
from runners.measure import toolcall_check
from runners.measure.load import burst as load_burst
from runners.measure.load import concurrency as load_concurrency
from runners.measure.load import level as load_level
from runners.measure.load import rate as load_rate
from runners.measure.load import scale_out as load_scale_out
from runners.measure.load import sweep as load_sweep
from runners.measure.recorder import Recorder
from runners.run_context import Run
from runners.telemetry import prometheus

FORCED_PROMPT = "Write a long story about a lighthouse keeper and the sea."
TOOLCALL_MAX_TURNS = 4


def forced_ask(tokens: int, stream: bool) -> Ask:
    return Ask([{"role": "user", "content": FORCED_PROMPT}], max_tokens=tokens, stream=stream,
               force_tokens=True)


def request_source(run: Run, rec: Recorder, max_tokens: int, first_variant: int):
    """(ask(index) -> Ask, prompt report(replies) -> dict | None) for the stream and load
    requests: the short fixed prompt; `prompt_tokens` engine tokens when the plan says; or
    a sample of `[benchmark.dataset]` (each entry's max_tokens, else `max_tokens`). Built
    prompts take variants first_variant, first_variant + 1, ... in the order asked, so no
    two requests of the run share one (runners/measure/prompts.py VARIANT_BASE)."""
    plan = run.plan
    if plan.dataset is not None:
        return _dataset_source(run, max_tokens)
    tokens = plan.prompt_tokens
    if tokens is None:
        ask = forced_ask(max_tokens, True)
        return (lambda variant: ask), (lambda replies: None)
    builder = prompts.PromptBuilder(rec)
    builder.calibrate(tokens)
    variants = itertools.count(first_variant)  # next() is atomic under the GIL

    def report(replies: list[Reply]) -> dict[str, Any]:
        return builder.report(tokens, _served_prompt_tokens(replies))

    return (lambda _: builder.ask(tokens, max_tokens, stream=True, variant=next(variants))), \
        report


def _served_prompt_tokens(replies: list[Reply]) -> list[int]:
    return [r.prompt_tokens for r in replies if r.ok and r.prompt_tokens is not None]


def _dataset_source(run: Run, max_tokens: int):
    """Dataset entries in their sampled order; replies end where the model stops."""
    spec = run.plan.dataset
    path = datasets.resolve(spec.path, run.experiment.source)
    entries, digest = datasets.load(path, spec.format)
    sampled = datasets.sample(entries, spec.samples, run.plan.seed)
    block = datasets.info(path, spec.format, digest, entries, sampled)

    def ask(variant: int) -> Ask:
        entry = sampled[variant % len(sampled)]
        return Ask(entry.messages, entry.max_tokens or max_tokens, stream=True)

    def report(replies: list[Reply]) -> dict[str, Any]:
        return {"method": "dataset", "dataset": block,
                "served": stats.distribution(_served_prompt_tokens(replies))}

    return ask, report


def _seconds(reply: Reply) -> float:
    return reply.last_s - reply.start_s


output_tokens = load_level.output_tokens


def warmup(run: Run, rec: Recorder) -> dict[str, Any]:
    """Untimed: one request of every shape used later, so no timed request pays compilation."""
    plan = run.plan
    shapes = [("decode-short", forced_ask(plan.decode_lengths[0], False)),
              ("decode-long", forced_ask(plan.decode_lengths[1], False)),
              ("stream", forced_ask(plan.stream_tokens, True)),
              ("load", forced_ask(plan.load_tokens, True))]
    if plan.prompt_tokens and plan.dataset is None:  # the long prompt's shape, untimed
        shapes.append(("prompt", prompts.PromptBuilder(rec).ask(
            plan.prompt_tokens, plan.load_tokens, stream=True)))
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
    good = [r for r in replies if r.ok and r.first_s is not None]
    return {**load_level.latencies(good),
            "usage_missing": sum(r.usage_source == "missing" for r in good)}


def stream(run: Run, rec: Recorder) -> dict[str, Any]:
    ask, prompt_report = request_source(run, rec, run.plan.stream_tokens,
                                        prompts.VARIANT_BASE["stream"])
    replies = []
    for i in range(run.plan.stream_requests):
        progress.emit("stream", "", i, run.plan.stream_requests)
        replies.append(rec.send(ask(i), index=i, prompt_tokens_asked=run.plan.prompt_tokens))
    return {"tokens": run.plan.stream_tokens, **load_level.counts(replies),
            **stream_metrics(replies), "prompt": prompt_report(replies),
            "errors_seen": sorted({r.error for r in replies if r.error})[:5]}


def load(run: Run, rec: Recorder) -> dict[str, Any]:
    """One level per concurrency (burst, concurrency modes) or per rate (rate mode, rising
    when `sweep`); runners/measure/load/ has a module per profile, one record format."""
    plan = run.plan
    ask, prompt_report = request_source(run, rec, plan.load_tokens,
                                        prompts.VARIANT_BASE["load"])
    extra = {"load_mode": plan.load_mode, "prompt_tokens_asked": plan.prompt_tokens,
             "slo": plan.slo}
    levels: list[dict[str, Any]] = []
    replies: list[Reply] = []
    notes: list[str] = []
    result: dict[str, Any] = {"tokens": plan.load_tokens, "mode": plan.load_mode}
    workers = max(plan.concurrency) if plan.load_mode != "rate" else plan.max_in_flight
    with ThreadPoolExecutor(max_workers=workers) as pool:
        if plan.load_mode == "rate":
            def rate_level(rate: float, i: int) -> dict[str, Any]:
                progress.emit("load", f"{rate:g} requests/s", i, len(plan.rates))
                rec.client.prepare(min(plan.max_in_flight, max(1, round(rate))))
                with prometheus.level_window(rec.client, levels):  # window, server figures
                    figures, done = load_rate.run_level(
                        rec, ask, rate, load_concurrency.window_from_now(plan), pool,
                        arrival=plan.arrival, burstiness=plan.burstiness, seed=plan.seed + i,
                        level=i, **extra)
                    levels.append(figures)
                replies.extend(done)
                return figures

            if plan.sweep:
                _, result["sweep"] = load_sweep.run(plan.rates, rate_level)
            else:
                for i, rate in enumerate(plan.rates):
                    merged = _merged_level(run, i, rate, notes)
                    if merged:
                        levels.append(merged)
                    else:
                        rate_level(rate, i)
        else:
            for i, concurrency in enumerate(plan.concurrency):
                progress.emit("load", f"concurrency {concurrency}", i, len(plan.concurrency))
                with prometheus.level_window(rec.client, levels):  # window, server figures
                    if plan.load_mode == "burst":
                        figures, done = load_burst.run_level(rec, ask, concurrency,
                                                             plan.load_batches, pool, level=i,
                                                             **extra)
                    else:
                        figures, done = load_concurrency.run_level(
                            rec, ask, concurrency, load_concurrency.window_from_now(plan),
                            pool, level=i, **extra)
                    levels.append(figures)
                replies += done
    return {**result, "levels": levels, "prompt": prompt_report(replies),
            "slo": slo.phase_block(levels, plan.slo),
            "scale_out_notes": notes}


def _merged_level(run: Run, index: int, rate: float, notes: list[str]
                  ) -> dict[str, Any] | None:
    """A scaled-out level from its shards' files, or None to send it here (no shards
    planned; or the shards never wrote, then the level says so)."""
    shards = load_scale_out.shards_for(rate, run.plan.runner_max_rate)
    if shards == 1:
        return None
    files = [run.read(load_scale_out.shard_key(index, k)) for k in range(shards)]
    if any(f is None for f in files):
        notes.append(
            f"level {index} ({rate:g}/s) needs {shards} runners but found "
            f"{sum(f is not None for f in files)} shard file(s): sent by this runner alone")
        return None
    return load_scale_out.merge(run.plan, index, rate, files)


def load_shard(run: Run, rec: Recorder, item: dict[str, Any]) -> dict[str, Any]:
    """One scale-out shard: its share of one level's arrivals from the shared instant;
    the replies' times on the epoch axis, for the load phase to merge."""
    plan = run.plan
    index, rate, shard, shards = item["level"], item["rate"], item["shard"], item["shards"]
    ask, _ = request_source(run, rec, plan.load_tokens,
                            prompts.shard_variant_base(index, shard))
    offsets = load_scale_out.shard_offsets_s(plan, index, rate, shard, shards)
    window = load_scale_out.window_at(plan, item["start_epoch"], perf=True)
    with ThreadPoolExecutor(max_workers=plan.max_in_flight) as pool:
        rec.client.prepare(min(plan.max_in_flight, max(1, round(rate / shards))))
        _, replies = load_rate.run_level(
            rec, ask, rate, window, pool, arrival=plan.arrival, burstiness=plan.burstiness,
            seed=plan.seed + index, offsets_s=offsets, level=index, shard=shard,
            load_mode=plan.load_mode, prompt_tokens_asked=plan.prompt_tokens)
    return {"level": index, "rate": rate, "shard": shard, "shards": shards,
            "start_epoch": item["start_epoch"], "scheduled": len(offsets),
            "replies": [load_scale_out.reply_times(r) for r in replies]}


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
