"""The report phase: summary.json (docs/results-format.md), report.md and PNG charts,
built from the phase files of one run. Also the compare table across runs.

matplotlib is an optional extra of the local CLI: without it (in Lambda) the charts are
skipped and the report says so.
"""

from __future__ import annotations

import json
import statistics
from typing import Any, Callable

from runners.results import (charts, engine_local_section, engine_section, html,
                             intervals, workload_section)
from runners.results.store import KeyExists, ResultsStore, latest_attempt_key
from runners.run_context import utc_now

SCHEMA = "benchstack.summary/1"
MEASURING = ("warmup", "decode", "stream", "context", "load", "quality", "toolcall")
PHASE_FILES = ("provision", "await_ready", *MEASURING, "teardown")
DIST_KEYS = ("p50", "p90", "p99", "mean", "n")
SERVER, ESTIMATE = "server usage", "estimate"


def _dist(d: dict[str, Any] | None) -> dict[str, float] | None:
    return None if not d else {k: d[k] for k in DIST_KEYS if k in d}


def _interval(pair: tuple[float, float] | None, digits: int = 6) -> list[float] | None:
    return None if pair is None else [round(pair[0], digits), round(pair[1], digits)]


def decode_interval_95(decode: dict[str, Any]) -> list[float] | None:
    """Bootstrap interval of the decode rate: the short and the long replies resampled
    apart, the rate refitted from their medians each time (runners/measure/stats.py)."""
    short, long = decode.get("short_tokens"), decode.get("long_tokens")
    ok = [smp for smp in decode.get("samples") or [] if smp.get("status") == "ok"]
    times = [[smp["seconds"] for smp in ok if smp["tokens_requested"] == n] for n in (short, long)]

    def rate(short_s: list[float], long_s: list[float]) -> float | None:
        gap = statistics.median(long_s) - statistics.median(short_s)
        return (long - short) / gap if gap > 0 else None

    return _interval(intervals.bootstrap_95(times, rate) if short and long else None)


def stream_samples(records: list[dict[str, Any]]) -> dict[str, list[float]]:
    """Per-request TTFT, TPOT and E2EL of the OK streamed replies, from their records (the
    definitions of runners/measure/phases.py stream_metrics; ITL needs chunk times, which
    records do not keep)."""
    out: dict[str, list[float]] = {"ttft_s": [], "tpot_s": [], "e2el_s": []}
    for r in records:
        start = r.get("intended_at") or r.get("sent_at")
        if r.get("status") != "ok" or start is None or r.get("first_at") is None:
            continue
        out["ttft_s"].append(r["first_at"] - start)
        out["e2el_s"].append(r["last_at"] - start)
        tokens = r.get("completion_tokens") or r.get("chunks") or 0
        if tokens > 1:
            out["tpot_s"].append((r["last_at"] - r["first_at"]) / (tokens - 1))
    return out


def _stream(stream: dict[str, Any], records: list[dict[str, Any]]) -> dict[str, Any]:
    """Each distribution with n, and a bootstrap interval for p50 and p99 where the
    per-request samples are on record."""
    samples = stream_samples(records)
    out = {}
    for key in ("ttft_s", "itl_s", "tpot_s", "e2el_s"):
        dist = _dist(stream.get(key))
        if dist and samples.get(key):
            for pct in (50, 99):
                dist[f"p{pct}_interval_95"] = _interval(
                    intervals.percentile_95(samples[key], pct))
        out[key] = dist
    return out


def _quality(quality: dict[str, Any]) -> dict[str, Any] | None:
    """Scores with their Wilson interval, and each answer (compare sets two runs side by side)."""
    if not quality or quality.get("skipped") or "correct" not in quality:
        return None
    return {"correct": quality["correct"], "correct_raw": quality.get("correct_raw"),
            "total": quality["total"],
            "interval_95": _interval(intervals.wilson_95(quality["correct"], quality["total"]),
                                     4),
            "answers": [{"answer": a.get("answer") or "", "correct": bool(a.get("correct")),
                         "correct_raw": a.get("correct_raw")}
                        for a in quality.get("answers") or []]}


def _source(missing: int, measured: bool) -> str | None:
    """Where a phase's token counts came from: the server's usage block, or one token
    per streamed chunk when any reply came without usage."""
    return None if not measured else ESTIMATE if missing else SERVER


def token_sources(decode: dict[str, Any], stream: dict[str, Any],
                  levels: list[dict[str, Any]]) -> dict[str, str | None]:
    ok = [smp for smp in decode.get("samples") or [] if smp.get("status") == "ok"]
    return {"decode": _source(sum(smp.get("usage_source") == "missing" for smp in ok), bool(ok)),
            "stream": _source(stream.get("usage_missing", 0), bool(stream.get("ok"))),
            "load": _source(sum(lvl.get("usage_missing", 0) for lvl in levels),
                            any(lvl.get("ok") for lvl in levels))}


def phase_outcome(name: str, data: dict[str, Any] | None) -> dict[str, str | None]:
    """{"state": done | failed | skipped | not run, "detail": the first line of why}."""
    if data is None:
        return {"state": "not run", "detail": None}
    error = data.get("error")
    if isinstance(error, dict):
        error = f"{error.get('kind')}: {error.get('message')}"
    if not error and name == "await_ready" and data.get("state") not in (None, "ready"):
        error = f"{data.get('state')}: {data.get('message')}"
    if not error and name == "teardown" and data.get("state") not in (None, "deleted"):
        error = str(data.get("state"))
    if error:
        return {"state": "failed", "detail": str(error).splitlines()[0][:160]}
    if data.get("skipped"):
        return {"state": "skipped", "detail": str(data.get("reason"))}
    return {"state": "done", "detail": data.get("note")}


def build_summary(files: dict[str, Any]) -> dict[str, Any]:
    """`files`: phase name (and "manifest", "cost") -> its JSON, or None when absent."""
    manifest = files.get("manifest") or {}
    exp = manifest.get("experiment") or {}
    placement = manifest.get("placement") or (files.get("await_ready") or {}).get(
        "placement") or {}
    decode = files.get("decode") or {}
    stream = files.get("stream") or {}
    load = (files.get("load") or {}).get("levels") or []
    quality = files.get("quality") or {}
    toolcall = files.get("toolcall") or {}
    return {
        "schema": SCHEMA,
        "run_id": manifest.get("run_id"),
        "experiment": exp.get("name"),
        "backend": exp.get("backend"),
        "model": {k: (exp.get("model") or {}).get(k)
                  for k in ("id", "served_name", "build", "precision")},
        "placement": {k: placement.get(k) for k in ("region", "az", "instance_type")},
        "timeline": {
            "started_at": manifest.get("started_at"),
            "provision_started_at": (files.get("provision") or {}).get("started_at"),
            "ready_at": (files.get("await_ready") or {}).get("ready_at"),
            "teardown_finished_at": (files.get("teardown") or {}).get("finished_at"),
            "finished_at": utc_now(),
        },
        "decode": {**{k: decode.get(k) for k in ("tokens_per_s", "intercept_s", "short_tokens",
                                                  "long_tokens", "repeats", "tokens_verified")},
                   "interval_95": decode_interval_95(decode)},
        "stream": _stream(stream, files.get("stream_requests") or []),
        "stream_tokens": stream.get("tokens"),
        "load": [{**entry, "ok": lvl.get("ok"), "output_tokens": lvl.get("output_tokens"),
                  "max_tokens": (files.get("load") or {}).get("tokens")}
                 for entry, lvl in zip(workload_section.summary_load(load), load)],
        "load_profile": workload_section.summary_load_profile(files.get("load")),
        "context": workload_section.summary_context(files.get("context")),
        "token_source": token_sources(decode, stream, load),
        "quality": _quality(quality),
        "toolcall": {"supported": toolcall.get("supported"), "runs": toolcall.get("runs", 0),
                     "correct": toolcall.get("correct", 0),
                     "filter_ok": toolcall.get("filter_ok", 0)},
        "degenerate_responses": sum((files.get(p) or {}).get("degenerate_responses", 0)
                                    for p in MEASURING),
        **engine_section.summary_fields(files, placement),  # memory, telemetry: with sources
        "host": engine_local_section.host(placement),
        "cost": files.get("cost") or {},
        "phases": {name: phase_outcome(name, files.get(name)) for name in PHASE_FILES},
    }


# ---------------------------------------------------------------- Markdown


def _num(value: Any, fmt: str = "{:.1f}") -> str:
    return "-" if value is None else fmt.format(value)


def _ms(value: Any) -> str:
    return "-" if value is None else f"{value * 1000:.1f}"


def _n(dist: dict[str, Any] | None) -> str:
    return "-" if not dist or dist.get("n") is None else str(dist["n"])


def _pcts(dist: dict[str, Any] | None, scale, keys=("p50", "p90", "p99")) -> str:
    return "-" if not dist else " / ".join(scale(dist[k]) for k in keys)


def _range(pair: list[float] | None, fmt: str = "{:.1f}") -> str:
    return "" if not pair else f" (95% {fmt.format(pair[0])}–{fmt.format(pair[1])})"


def quality_text(quality: dict[str, Any] | None) -> str:
    """"12 / 40 (95% 17%–46%); seeds' regex 13 / 40", or "skipped"."""
    if not quality:
        return "skipped"
    text = f"{quality['correct']} / {quality['total']}" + _range(quality.get("interval_95"),
                                                                 "{:.0%}")
    if quality.get("correct_raw") is not None:
        text += f"; seeds' regex (echo counted) {quality['correct_raw']} / {quality['total']}"
    return text


def header_section(s: dict[str, Any], files: dict[str, Any]) -> list[str]:
    lines = [f"# {s['experiment']} — run {s['run_id']}", "",
             f"Backend **{s['backend']}**, model `{s['model']['id']}` "
             f"({s['model']['build']}, {s['model']['precision']}); placement "
             f"{s['placement']['region'] or '-'} / {s['placement']['az'] or '-'} / "
             f"{s['placement']['instance_type'] or '-'}.", ""]
    if s.get("partial"):
        lines += ["**Partial report**: written while the run was still going (no teardown yet);"
                  " the run's own report replaces it as summary.json and report.md.", ""]
    return lines


def summary_section(s: dict[str, Any], files: dict[str, Any]) -> list[str]:
    d, sources = s["decode"], s.get("token_source") or {}
    lines = ["## Summary", "", "| metric | value | n |", "|---|---|---|",
             f"| decode rate (tokens/s) | {_num(d['tokens_per_s'])}{_range(d.get('interval_95'))}"
             f" | {d['repeats'] or '-'} per length |",
             f"| per-call fixed cost (intercept, ms) | {_ms(d['intercept_s'])} | |",
             f"| decode reply lengths verified by server usage ({d['short_tokens']}/"
             f"{d['long_tokens']} tokens) | {d['tokens_verified']} | |"]
    for name, label, unit, scale in (("ttft_s", "TTFT", "ms", _ms), ("tpot_s", "TPOT", "ms", _ms),
                                     ("itl_s", "ITL", "ms", _ms),
                                     ("e2el_s", "end-to-end", "s", "{:.3f}".format)):
        dist = s["stream"][name]
        lines.append(f"| {label} p50 / p90 / p99 ({unit}, streamed) | {_pcts(dist, scale)} | "
                     f"{_n(dist)} |")
    tc = s["toolcall"]
    tc_text = ("not supported" if tc["supported"] is False else "skipped"
               if tc["supported"] is None else
               f"{tc['correct']} / {tc['runs']} correct, {tc['filter_ok']} right filter")
    quality = s["quality"]
    lines += [f"| quality (exact answers, echo removed) | {quality_text(quality)} | "
              f"{quality['total'] if quality else '-'} |",
              f"| tool call (count_ids) | {tc_text} | {tc['runs'] or '-'} |",
              f"| degenerate responses | {s['degenerate_responses']} | |",
              f"| weights (GiB) | {_num(s['memory']['weights_gib'], '{:.3f}')} | |", "",
              "Token counts: " + ", ".join(f"{phase} {sources.get(phase) or 'not measured'}"
                                           for phase in ("decode", "stream", "load")) +
              f" ({ESTIMATE}: the server sent no usage, so one token is counted per streamed "
              "chunk; a decode rate from estimates assumes the forced lengths held).", ""]
    return lines


def _load_rate(s: dict[str, Any], concurrency: int) -> float | None:
    return next((lvl["tokens_per_s"] for lvl in s["load"]
                 if lvl["concurrency"] == concurrency and lvl["tokens_per_s"]), None)


def speeds_section(s: dict[str, Any], files: dict[str, Any]) -> list[str]:
    """The single-request speeds side by side: what each measures, which cost line uses
    which, and why they differ (the intercept)."""
    d, tpot = s["decode"], s["stream"].get("tpot_s")
    rate, icpt, c1 = d["tokens_per_s"], d["intercept_s"], _load_rate(s, 1)
    if not (rate or tpot or c1):
        return []
    per_million = (s.get("cost") or {}).get("usd_per_million_output_tokens") or {}
    basis, top = per_million.get("one_request_basis"), per_million.get("highest_concurrency_level")
    uses = {"decode": "$ / 1M output tokens, one request" if basis == "decode" else "-",
            "load1": "$ / 1M output tokens, one request" if basis == "load at concurrency 1"
            else "-"}
    load_tokens = next((lvl.get("max_tokens") for lvl in s["load"] if lvl.get("max_tokens")), None)
    lines = ["## Speeds: which figure is which", "",
             "| figure | tokens/s | what it times | used by |", "|---|---|---|---|",
             f"| decode rate | {_num(rate)}{_range(d.get('interval_95'))} | "
             f"({d['long_tokens']} − {d['short_tokens']}) tokens over the difference of the median"
             f" times of non-streamed replies: every per-call cost cancels | {uses['decode']} |",
             f"| 1 / TPOT p50 | {_num(1 / tpot['p50'] if tpot and tpot['p50'] else None)} | "
             f"streamed replies ({s.get('stream_tokens') or '-'} tokens, n={_n(tpot)}): first "
             f"to last token over tokens − 1; no prefill, but each chunk's delivery | - |",
             f"| load, concurrency 1 | {_num(c1)} | output tokens over each batch's wall time, "
             f"from the intended send to the last token: includes TTFT and request overhead "
             f"| {uses['load1']} |"]
    if top and top != 1:
        lines.append(f"| load, concurrency {top} | {_num(_load_rate(s, top))} | the same, "
                     f"{top} requests at once | $ / 1M output tokens, concurrency {top} |")
    lines.append("")
    if rate and icpt is not None:
        ttft = (s["stream"].get("ttft_s") or {}).get("p50")
        text = (f"The decode rate leaves out the intercept, {icpt * 1000:.0f} ms: what a "
                "zero-token reply would take, i.e. prefill of the prompt plus request overhead "
                "(connection, request parsing and scheduling, returning the body).")
        asked = ((files.get("stream") or {}).get("prompt") or {}).get("asked")
        if ttft is not None and asked:
            text += (f" Streamed TTFT p50 ({ttft * 1000:.0f} ms) does not compare with it: the "
                     f"streamed prompts have {asked} tokens ([benchmark] prompt_tokens), the "
                     "decode replies the short fixed prompt.")
        elif ttft is not None:
            text += (f" Streamed TTFT p50 is {ttft * 1000:.0f} ms: prefill and the first token "
                     "only, so intercept − TTFT "
                     f"({(icpt - ttft) * 1000:.0f} ms) is overhead that a stream does not show "
                     "before its first token (and, on CPU, the slowdown of later tokens).")
        if load_tokens and c1:
            predicted = load_tokens / (icpt + load_tokens / rate)
            text += (f" A {load_tokens}-token reply at {rate:.1f} tokens/s plus the intercept "
                     f"predicts {predicted:.1f} tokens/s at concurrency 1; measured {c1:.1f}.")
        lines += [text, ""]
    return lines


def load_section(s: dict[str, Any], files: dict[str, Any]) -> list[str]:
    """Levels by concurrency (burst and concurrency modes); rate levels are in the
    workload section's table."""
    if not s["load"] or not all(lvl["concurrency"] for lvl in s["load"]):
        return []
    base_ttft = next(((lvl.get("ttft_s") or {}).get("p50") for lvl in s["load"]
                      if lvl["concurrency"] == 1), None)
    lines = ["## Throughput vs concurrency", "",
             "| concurrency | tokens/s | requests (ok) | errors | throttles | TTFT p50 / p99 (ms)"
             " | queueing: TTFT p50 − c=1 (ms) | client send lag p99 (ms) | latency p50 / p99 (s)"
             " | n |", "|---|---|---|---|---|---|---|---|---|---|"]
    for lvl in s["load"]:
        ttft, lag = lvl.get("ttft_s"), lvl.get("scheduling_lag_s")
        queue = (_ms(ttft["p50"] - base_ttft) if ttft and base_ttft is not None else "-")
        lines.append(
            f"| {lvl['concurrency']} | {_num(lvl['tokens_per_s'])} | {lvl['requests']} "
            f"({'-' if lvl.get('ok') is None else lvl['ok']}) | {lvl['errors']} | "
            f"{lvl['throttles']} | {_pcts(ttft, _ms, ('p50', 'p99'))} | {queue} | "
            f"{_ms(lag and lag['p99'])} | "
            f"{_pcts(lvl['latency_s'], '{:.3f}'.format, ('p50', 'p99'))} | "
            f"{_n(lvl['latency_s'])} |")
    lines += ["", "Queueing is how much later the first token comes than at one request: time "
              "spent waiting for a batch slot and sharing prefill. Send lag is the client's "
              "own delay past the intended send time (a slow client shows up here).", ""]
    return lines


def cost_section(s: dict[str, Any], files: dict[str, Any]) -> list[str]:
    return _cost_lines(s["cost"])


def phases_section(s: dict[str, Any], files: dict[str, Any]) -> list[str]:
    lines = ["## Phases", "", "| phase | outcome |", "|---|---|"]
    for name, outcome in s["phases"].items():
        detail = outcome["detail"]
        text = {"done": detail or "done", "not run": "not run"}.get(
            outcome["state"], f"{outcome['state']}: {detail}")
        lines.append(f"| {name} | {text} |")
    return lines + [""]


def quality_section(s: dict[str, Any], files: dict[str, Any]) -> list[str]:
    answers = (files.get("quality") or {}).get("answers")
    if not answers:
        return []
    lines = ["## Quality answers", "", f"Score: {quality_text(s['quality'])}. *correct* is "
             "scored after every echo of the question is cut from the reply; *raw* is the "
             "seeds' regex on the whole reply. Forty questions cannot resolve a one- or "
             "two-question difference.", "",
             "| # | question | answer | correct | raw |", "|---|---|---|---|---|"]
    for i, a in enumerate(answers):
        answer = " ".join(a["answer"].split())[:60].replace("|", "\\|")
        raw = a.get("correct_raw")
        lines.append(f"| {i + 1} | {a['prompt']} | {answer or a['status']} | "
                     f"{'yes' if a['correct'] else 'no'} | "
                     f"{'-' if raw is None else 'yes' if raw else 'no'} |")
    return lines + [""]


# The report, in order. A section is `(summary, files) -> Markdown lines` ([] to leave
# itself out); another room adds its own with one line here. report.html renders
# whatever these produce, so a new section needs nothing else.
SECTIONS: list[Callable[[dict[str, Any], dict[str, Any]], list[str]]] = [
    header_section, summary_section, speeds_section, load_section,
    workload_section.markdown_lines, engine_local_section.lines, engine_section.lines, cost_section, phases_section,
    quality_section,
]


def markdown(summary: dict[str, Any], files: dict[str, Any], charts_note: str,
             charts: list[str]) -> str:
    lines: list[str] = []
    for section in SECTIONS:
        lines += section(summary, files)
    lines += ["## Charts", "", charts_note, ""]
    lines += [f"![{c}](charts/{c})" for c in charts]
    return "\n".join(lines).rstrip() + "\n"


def _cost_lines(cost: dict[str, Any]) -> list[str]:
    """The cost phase's block (runners/cost/phase.py), as the report's Cost section."""
    if not cost:
        return []
    per_million = cost["usd_per_million_output_tokens"]
    usd = lambda v: "-" if v is None else f"${v:,.3f}"
    lines = ["## Cost", "", "| figure | value |", "|---|---|",
             f"| billing | {cost['billing']} |",
             f"| $ / hour | {usd(cost['usd_per_hour'])} |",
             f"| $ / 1M output tokens, one request ({_num(per_million['one_request_tokens_per_s'])}"
             f" tokens/s) | {usd(per_million['one_request'])} |",
             *([f"| $ / 1M output tokens, concurrency {per_million['highest_concurrency_level']}"
                f" ({_num(per_million['highest_concurrency_tokens_per_s'])} tokens/s) | "
                f"{usd(per_million['highest_concurrency'])} |"]
               if per_million.get("highest_concurrency_level") else [])]
    break_even = cost.get("break_even") or {}
    if break_even.get("output_tokens_per_s"):
        lines.append(f"| break-even vs Bedrock {break_even.get('model_id')} (tokens/s, 24x7) | "
                     f"{_num(break_even['output_tokens_per_s'])} |")
    idle = cost.get("idle") or {}
    if idle.get("billable_minutes") is not None:
        lines.append(f"| this run: billable minutes, $ | {idle['billable_minutes']}, "
                     f"{usd(idle.get('usd'))} |")
    lines += ["", *(f"- {m}" for m in cost.get("missing") or []), ""]
    return lines


# ---------------------------------------------------------------- the phase


def read_files(store: ResultsStore, prefix: str) -> dict[str, Any]:
    """Phase name -> its JSON (None when absent), and "stream_requests": the stream
    phase's request records (requests/stream.jsonl), for the percentiles' intervals."""
    names = ("manifest", *PHASE_FILES, "cost")
    keys = set(store.list(prefix))  # one listing, not a lookup per file and attempt
    # Repeated steps (a second region, a retried teardown) keep every attempt; the last counts.
    found = {name: latest_attempt_key(f"{prefix}{name}", keys) for name in names}
    files = {name: store.get_json(key) if key else None for name, key in found.items()}
    stream_key = f"{prefix}requests/stream.jsonl"
    files["stream_requests"] = [json.loads(line) for line in store.get_bytes(stream_key)
                                .decode().splitlines() if line.strip()] \
        if stream_key in keys else []
    files["telemetry"] = engine_section.read_telemetry(store, prefix, keys)
    return files


def _put_new(store: ResultsStore, key: str, data: bytes, content_type: str,
             written: list[str], kept: list[str]) -> None:
    try:
        store.put_bytes(key, data, content_type)
        written.append(key)
    except KeyExists:
        kept.append(key)  # an earlier report wrote it; results are never overwritten


def run_is_live(store: ResultsStore, prefix: str, files: dict[str, Any]) -> bool:
    """Still being written: teardown always runs before the report phase (the driver and the
    workflow both end with teardown, report), so no teardown file and no summary means the
    run has not finished."""
    return files["teardown"] is None and not store.exists(f"{prefix}summary.json")


def side_prefix(store: ResultsStore, prefix: str) -> str:
    """partial/<UTC time>/ inside the run folder, a fresh one each time."""
    stamp = utc_now().replace(":", "").replace("-", "").split(".")[0].split("+")[0]
    base, attempt = f"{prefix}partial/{stamp}", 1
    while store.list(f"{base}/" if attempt == 1 else f"{base}-{attempt}/"):
        attempt += 1
    return f"{base}/" if attempt == 1 else f"{base}-{attempt}/"


def write_report(store: ResultsStore, prefix: str, *, live_to_side: bool = False
                 ) -> dict[str, Any]:
    """Write requests.jsonl, summary.json, report.md, report.html and charts/ where not yet
    written.

    With `live_to_side` (the `report` command) a run that is still going gets its report in
    partial/<UTC time>/ (summary-partial.json, report.md, report.html, charts/) instead: the run's own
    final report is then the first to write summary.json and report.md, so nothing written
    while it ran can stand in for it. compare never reads the partial summary."""
    files = read_files(store, prefix)
    if files["manifest"] is None:
        raise FileNotFoundError(f"{store.uri(prefix)}: no manifest.json; not a run folder")
    written: list[str] = []
    kept: list[str] = []
    summary = build_summary(files)
    side = side_prefix(store, prefix) if live_to_side and run_is_live(store, prefix, files) \
        else None
    summary["partial"] = side is not None
    out_prefix = side or prefix
    if side is None:
        parts = [k for k in store.list(f"{prefix}requests/") if k.endswith(".jsonl")]
        order = {name: i for i, name in enumerate(PHASE_FILES)}
        parts.sort(key=lambda k: order.get(k.rsplit("/", 1)[-1].removesuffix(".jsonl"), 99))
        _put_new(store, f"{prefix}requests.jsonl", b"".join(store.get_bytes(k) for k in parts),
                 "application/x-ndjson", written, kept)
    pngs, charts_note = charts.run_charts(summary, files)
    for name, png in pngs.items():
        _put_new(store, f"{out_prefix}charts/{name}", png, "image/png", written, kept)
    _put_new(store, f"{out_prefix}{'summary-partial.json' if side else 'summary.json'}",
             (json.dumps(summary, indent=2) + "\n").encode(), "application/json", written, kept)
    text = markdown(summary, files, charts_note, sorted(pngs))
    _put_new(store, f"{out_prefix}report.md", text.encode(), "text/markdown", written, kept)
    page = html.page(text, {f"charts/{name}": png for name, png in pngs.items()},
                     title=f"{summary['experiment']} — run {summary['run_id']}")
    _put_new(store, f"{out_prefix}report.html", page.encode(), "text/html", written, kept)
    return {"summary": summary, "written": written, "kept": kept, "charts": charts_note,
            "markdown": text, "partial_prefix": side}


# ---------------------------------------------------------------- compare


def compare_table(summaries: list[dict[str, Any]]) -> str:
    """One Markdown row per run: the headline figures side by side, n beside each
    distribution and where the token counts came from."""
    head = ["experiment", "run", "backend", "decode tok/s", "TTFT p50 ms (n)",
            "TPOT p50 ms (n)", "best load tok/s (at)", "quality", "tool call", "degenerate",
            "tokens from"]
    rows = [head, ["---"] * len(head)]
    for s in summaries:
        ttft, tpot = s["stream"].get("ttft_s"), s["stream"].get("tpot_s")
        best = max((lvl for lvl in s["load"] if lvl["tokens_per_s"]),
                   key=lambda lvl: lvl["tokens_per_s"], default=None)
        q, tc = s.get("quality"), s["toolcall"]
        sources = s.get("token_source") or {}
        estimated = [phase for phase, source in sources.items() if source == ESTIMATE]
        rows.append([
            str(s["experiment"]), str(s["run_id"]), str(s["backend"]),
            _num(s["decode"]["tokens_per_s"]) + _range(s["decode"].get("interval_95")),
            f"{_ms(ttft and ttft['p50'])} ({_n(ttft)})",
            f"{_ms(tpot and tpot['p50'])} ({_n(tpot)})",
            f"{best['tokens_per_s']:.1f} ({workload_section.level_name(best)})" if best else "-",
            quality_text(q) if q else "-",
            "not supported" if tc["supported"] is False else
            f"{tc['correct']}/{tc['runs']}" if tc["supported"] else "-",
            str(s["degenerate_responses"]),
            f"{ESTIMATE} ({', '.join(estimated)})" if estimated else SERVER if sources else "-",
        ])
    return "\n".join("| " + " | ".join(r) + " |" for r in rows) + "\n"
