"""The report phase: summary.json (docs/results-format.md), report.md and PNG charts,
built from the phase files of one run. Also the compare table across runs.

matplotlib is an optional extra of the local CLI: without it (in Lambda) the charts are
skipped and the report says so.
"""

from __future__ import annotations

import io
import json
from typing import Any

from runners.results import engine_local_section
from runners.results.store import KeyExists, ResultsStore, latest_attempt_key
from runners.run_context import utc_now

SCHEMA = "benchstack.summary/1"
MEASURING = ("warmup", "decode", "stream", "load", "quality", "toolcall")
PHASE_FILES = ("provision", "await_ready", *MEASURING, "teardown")
DIST_KEYS = ("p50", "p90", "p99", "mean")


def _dist(d: dict[str, Any] | None) -> dict[str, float] | None:
    return None if not d else {k: d[k] for k in DIST_KEYS}


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
        "decode": {k: decode.get(k) for k in ("tokens_per_s", "intercept_s", "short_tokens",
                                               "long_tokens", "repeats", "tokens_verified")},
        "stream": {k: _dist(stream.get(k)) for k in ("ttft_s", "itl_s", "tpot_s", "e2el_s")},
        "load": [{"concurrency": lvl["concurrency"], "tokens_per_s": lvl["tokens_per_s"],
                  "requests": lvl["requests"], "errors": lvl["errors"],
                  "throttles": lvl["throttles"], "latency_s": _dist(lvl["latency_s"])}
                 for lvl in load],
        "quality": None if not quality or quality.get("skipped") or "correct" not in quality
        else {"correct": quality["correct"], "total": quality["total"]},
        "toolcall": {"supported": toolcall.get("supported"), "runs": toolcall.get("runs", 0),
                     "correct": toolcall.get("correct", 0),
                     "filter_ok": toolcall.get("filter_ok", 0)},
        "degenerate_responses": sum((files.get(p) or {}).get("degenerate_responses", 0)
                                    for p in MEASURING),
        "memory": {k: (placement.get("memory") or {}).get(k)
                   for k in ("weights_gib", "kv_cache_tokens")},
        "host": engine_local_section.host(placement),
        "cost": files.get("cost") or {},
    }


# ---------------------------------------------------------------- Markdown


def _num(value: Any, fmt: str = "{:.1f}") -> str:
    return "-" if value is None else fmt.format(value)


def _ms(value: Any) -> str:
    return "-" if value is None else f"{value * 1000:.1f}"


def markdown(summary: dict[str, Any], files: dict[str, Any], charts_note: str,
             charts: list[str]) -> str:
    s, d = summary, summary["decode"]
    lines = [f"# {s['experiment']} — run {s['run_id']}", "",
             f"Backend **{s['backend']}**, model `{s['model']['id']}` "
             f"({s['model']['build']}, {s['model']['precision']}); placement "
             f"{s['placement']['region'] or '-'} / {s['placement']['az'] or '-'} / "
             f"{s['placement']['instance_type'] or '-'}.", "",
             "## Summary", "", "| metric | value |", "|---|---|",
             f"| decode rate (tokens/s) | {_num(d['tokens_per_s'])} |",
             f"| per-call fixed cost (intercept, ms) | {_ms(d['intercept_s'])} |",
             f"| reply lengths verified ({d['short_tokens']}/{d['long_tokens']} tokens, "
             f"{d['repeats']} each) | {d['tokens_verified']} |"]
    for name, label in (("ttft_s", "TTFT"), ("tpot_s", "TPOT"), ("itl_s", "ITL"),
                        ("e2el_s", "end-to-end")):
        dist = s["stream"][name]
        lines.append(f"| {label} p50 / p90 / p99 (ms) | " + (" / ".join(
            _ms(dist[k]) for k in ("p50", "p90", "p99")) if dist else "-") + " |")
    quality = s["quality"]
    quality_text = f"{quality['correct']} / {quality['total']}" if quality else "skipped"
    lines.append(f"| quality (exact answers) | {quality_text} |")
    tc = s["toolcall"]
    tc_text = ("not supported" if tc["supported"] is False else "skipped"
               if tc["supported"] is None else
               f"{tc['correct']} / {tc['runs']} correct, {tc['filter_ok']} right filter")
    lines += [f"| tool call (count_ids) | {tc_text} |",
              f"| degenerate responses | {s['degenerate_responses']} |",
              f"| weights (GiB) | {_num(s['memory']['weights_gib'], '{:.3f}')} |", ""]
    if s["load"]:
        lines += ["## Throughput vs concurrency", "",
                  "| concurrency | tokens/s | requests | errors | throttles | latency p50 / p90 "
                  "/ p99 (s) |", "|---|---|---|---|---|---|"]
        for lvl in s["load"]:
            lat = lvl["latency_s"]
            lines.append(f"| {lvl['concurrency']} | {_num(lvl['tokens_per_s'])} | "
                         f"{lvl['requests']} | {lvl['errors']} | {lvl['throttles']} | " +
                         (" / ".join(f"{lat[k]:.3f}" for k in ("p50", "p90", "p99"))
                          if lat else "-") + " |")
        lines.append("")
    lines += engine_local_section.lines(s, files)
    lines += _cost_lines(s["cost"])
    lines += ["## Phases", "", "| phase | outcome |", "|---|---|"]
    for name in PHASE_FILES:
        data = files.get(name)
        error = (data or {}).get("error")
        if isinstance(error, dict):
            error = f"{error.get('kind')}: {error.get('message')}"
        outcome = "not run" if data is None else error or (
            "skipped: " + str(data.get("reason")) if data.get("skipped") else
            data.get("note") or data.get("state") or "done")
        lines.append(f"| {name} | {str(outcome).splitlines()[0][:160]} |")
    lines.append("")
    quality_file = files.get("quality") or {}
    if quality_file.get("answers"):
        lines += ["## Quality answers", "", "| # | question | answer | correct |",
                  "|---|---|---|---|"]
        for i, a in enumerate(quality_file["answers"]):
            answer = " ".join(a["answer"].split())[:60].replace("|", "\\|")
            lines.append(f"| {i + 1} | {a['prompt']} | {answer or a['status']} | "
                         f"{'yes' if a['correct'] else 'no'} |")
        lines.append("")
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
             f"| $ / 1M output tokens, concurrency {per_million['highest_concurrency_level'] or '-'}"
             f" ({_num(per_million['highest_concurrency_tokens_per_s'])} tokens/s) | "
             f"{usd(per_million['highest_concurrency'])} |"]
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


# ---------------------------------------------------------------- charts


def render_charts(summary: dict[str, Any], files: dict[str, Any]) -> tuple[dict[str, bytes], str]:
    """PNG bytes by file name, and a sentence saying what was drawn or why not."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return {}, "Charts skipped: matplotlib is not installed (it is an optional extra of " \
                   "the local CLI: pip install -r requirements-local.txt)."
    pngs: dict[str, bytes] = {}

    def save(name: str, fig) -> None:
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
        plt.close(fig)
        pngs[name] = buf.getvalue()

    decode = files.get("decode") or {}
    ok = [smp for smp in decode.get("samples") or [] if smp["status"] == "ok"]
    if ok:
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.scatter([smp["tokens_requested"] for smp in ok], [smp["seconds"] for smp in ok])
        rate, icpt = decode.get("tokens_per_s"), decode.get("intercept_s")
        if rate:
            xs = [0, decode["long_tokens"]]
            ax.plot(xs, [icpt + x / rate for x in xs], "--",
                    label=f"{rate:.1f} tokens/s, intercept {icpt * 1000:.0f} ms")
            ax.legend()
        ax.set(xlabel="reply tokens", ylabel="seconds", title="Decode rate")
        save("decode_rate.png", fig)
    levels = [lvl for lvl in summary["load"] if lvl["tokens_per_s"]]
    if levels:
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.plot([lvl["concurrency"] for lvl in levels], [lvl["tokens_per_s"] for lvl in levels],
                "o-")
        ax.set(xlabel="concurrent requests", ylabel="output tokens/s",
               title="Throughput vs concurrency")
        ax.set_xscale("log", base=2)
        save("throughput.png", fig)
    dists = {k: v for k, v in summary["stream"].items() if v}
    if dists:
        fig, ax = plt.subplots(figsize=(7, 4))
        width = 0.25
        for i, pct in enumerate(("p50", "p90", "p99")):
            ax.bar([j + i * width for j in range(len(dists))],
                   [v[pct] * 1000 for v in dists.values()], width, label=pct)
        ax.set_xticks([j + width for j in range(len(dists))],
                      [k.removesuffix("_s").upper() for k in dists])
        ax.set(ylabel="ms", title="Latency percentiles (streamed)")
        ax.set_yscale("log")
        ax.legend()
        save("latency.png", fig)
    return pngs, f"{len(pngs)} chart(s) drawn with matplotlib."


# ---------------------------------------------------------------- the phase


def read_files(store: ResultsStore, prefix: str) -> dict[str, Any]:
    names = ("manifest", *PHASE_FILES, "cost")
    keys = set(store.list(prefix))  # one listing, not a lookup per file and attempt
    # Repeated steps (a second region, a retried teardown) keep every attempt; the last counts.
    found = {name: latest_attempt_key(f"{prefix}{name}", keys) for name in names}
    return {name: store.get_json(key) if key else None for name, key in found.items()}


def _put_new(store: ResultsStore, key: str, data: bytes, content_type: str,
             written: list[str], kept: list[str]) -> None:
    try:
        store.put_bytes(key, data, content_type)
        written.append(key)
    except KeyExists:
        kept.append(key)  # an earlier report wrote it; results are never overwritten


def write_report(store: ResultsStore, prefix: str) -> dict[str, Any]:
    """Write requests.jsonl, summary.json, report.md and charts/ where not yet written."""
    files = read_files(store, prefix)
    if files["manifest"] is None:
        raise FileNotFoundError(f"{store.uri(prefix)}: no manifest.json; not a run folder")
    written: list[str] = []
    kept: list[str] = []
    parts = [k for k in store.list(f"{prefix}requests/") if k.endswith(".jsonl")]
    order = {name: i for i, name in enumerate(PHASE_FILES)}
    parts.sort(key=lambda k: order.get(k.rsplit("/", 1)[-1].removesuffix(".jsonl"), 99))
    _put_new(store, f"{prefix}requests.jsonl",
             b"".join(store.get_bytes(k) for k in parts), "application/x-ndjson", written, kept)
    summary = build_summary(files)
    pngs, charts_note = render_charts(summary, files)
    for name, png in pngs.items():
        _put_new(store, f"{prefix}charts/{name}", png, "image/png", written, kept)
    _put_new(store, f"{prefix}summary.json", (json.dumps(summary, indent=2) + "\n")
             .encode(), "application/json", written, kept)
    text = markdown(summary, files, charts_note, sorted(pngs))
    _put_new(store, f"{prefix}report.md", text.encode(), "text/markdown", written, kept)
    return {"summary": summary, "written": written, "kept": kept, "charts": charts_note,
            "markdown": text}


# ---------------------------------------------------------------- compare


def compare_table(summaries: list[dict[str, Any]]) -> str:
    """One Markdown row per run: the headline figures side by side."""
    head = ["experiment", "run", "backend", "decode tok/s", "TTFT p50 ms", "TPOT p50 ms",
            "best load tok/s (conc.)", "quality", "tool call", "degenerate"]
    rows = [head, ["---"] * len(head)]
    for s in summaries:
        ttft, tpot = s["stream"].get("ttft_s"), s["stream"].get("tpot_s")
        best = max((lvl for lvl in s["load"] if lvl["tokens_per_s"]),
                   key=lambda lvl: lvl["tokens_per_s"], default=None)
        q, tc = s.get("quality"), s["toolcall"]
        rows.append([
            str(s["experiment"]), str(s["run_id"]), str(s["backend"]),
            _num(s["decode"]["tokens_per_s"]), _ms(ttft and ttft["p50"]),
            _ms(tpot and tpot["p50"]),
            f"{best['tokens_per_s']:.1f} ({best['concurrency']})" if best else "-",
            f"{q['correct']}/{q['total']}" if q else "-",
            "not supported" if tc["supported"] is False else
            f"{tc['correct']}/{tc['runs']}" if tc["supported"] else "-",
            str(s["degenerate_responses"]),
        ])
    return "\n".join("| " + " | ".join(r) + " |" for r in rows) + "\n"
