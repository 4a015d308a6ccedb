"""The `context` phase: TTFT, prefill and decode against prompt length.

Per length in `context_lengths` (prompts built to that many engine tokens,
runners/measure/prompts.py): one untimed request (an engine with compiled shapes pays a
new one once), then `context_repeats` pairs of streamed forced replies of the short and
long decode lengths, order alternating. From them:

- TTFT percentiles (with n) over every timed reply;
- prefill tokens/s = the served prompt tokens / TTFT p50 (network and queueing included,
  so it is a floor on the engine's own prefill rate);
- decode tokens/s at that context = (long - short) / (median E2EL long - median E2EL
  short): the difference cancels prefill and every per-call cost, so it is the rate the
  seeds call the engine's steady-state decode;
- end-to-end tokens/s = long / median E2EL long, prefill included.

gemma4-dev's table (seed 001): decode stays flat across a 50x context range while
end-to-end falls, because prefill grows with the prompt. These rows reproduce that table.
"""

from __future__ import annotations

import itertools
import statistics
from typing import Any

from runners import progress
from runners.backends.reply import Reply
from runners.measure import prompts, stats
from runners.measure.load import level



def _row(tokens: int, short: int, long: int, replies: dict[int, list[Reply]],
         builder: prompts.PromptBuilder) -> dict[str, Any]:
    every = replies[short] + replies[long]
    good = [r for r in every if r.ok]
    timed = {n: [r.last_s - r.start_s for r in replies[n] if r.ok] for n in (short, long)}
    served = [r.prompt_tokens for r in good if r.prompt_tokens is not None]
    prompt = builder.report(tokens, served)
    served_tokens = round(statistics.median(served)) if served else prompt["counted"]
    lat = level.latencies(good)
    row: dict[str, Any] = {
        "prompt_tokens": tokens, "served_prompt_tokens": served_tokens, "prompt": prompt,
        **level.counts(every), "ttft_s": lat["ttft_s"], "tpot_s": lat["tpot_s"],
        "e2el_short_s": stats.distribution(timed[short]),
        "e2el_long_s": stats.distribution(timed[long]),
        "prefill_tokens_per_s": None, "decode_tokens_per_s": None, "intercept_s": None,
        "end_to_end_tokens_per_s": None, "tokens_verified": bool(good) and all(
            r.completion_tokens == n for n in (short, long) for r in replies[n] if r.ok),
        "note": prompt["note"],
    }
    if lat["ttft_s"] and served_tokens:
        row["prefill_tokens_per_s"] = served_tokens / lat["ttft_s"]["p50"]
    if not (timed[short] and timed[long]):
        row["note"] = "no successful reply at one of the decode lengths: no decode rate"
        return row
    row["end_to_end_tokens_per_s"] = long / statistics.median(timed[long])
    try:
        row["decode_tokens_per_s"], row["intercept_s"] = stats.decode_fit(
            short, long, timed[short], timed[long])
    except ValueError as exc:
        row["note"] = str(exc)
    if not row["tokens_verified"]:
        row["note"] = row["note"] or ("some replies did not have the forced length (or the "
                                      "server sent no usage): the decode rate assumes they did")
    return row


def run(run, rec) -> dict[str, Any]:
    plan = run.plan
    if not plan.context_lengths:
        return {"skipped": True, "reason": "benchmark.context_lengths is empty"}
    short, long = plan.decode_lengths
    builder = prompts.PromptBuilder(rec)
    rows = []
    steps = len(plan.context_lengths) * (1 + 2 * plan.context_repeats)
    # One variant per request over all lengths: a shorter prompt of the same variant would
    # be a cached prefix of the longer one.
    variants = itertools.count(prompts.VARIANT_BASE["context"])
    for i, tokens in enumerate(plan.context_lengths):
        progress.emit("context", f"{tokens} prompt tokens", len(rows) * steps
                      // len(plan.context_lengths), steps)
        rec.send(builder.ask(tokens, short, stream=True, variant=next(variants)),
                 shape="context-warmup", prompt_tokens_asked=tokens)
        replies: dict[int, list[Reply]] = {short: [], long: []}
        for repeat in range(plan.context_repeats):
            for n in ((short, long) if repeat % 2 == 0 else (long, short)):
                replies[n].append(rec.send(builder.ask(tokens, n, stream=True,
                                                       variant=next(variants)),
                                           prompt_tokens_asked=tokens, reply_tokens=n,
                                           repeat=repeat))
        rows.append(_row(tokens, short, long, replies, builder))
    return {"short_tokens": short, "long_tokens": long, "repeats": plan.context_repeats,
            "lengths": rows}
