"""Compare report across runs: one table for every backend, sorted in code.

Reads summary.json from each run folder and writes compare.md, compare.csv and, when
matplotlib is importable, charts/*.png. Columns follow the seeds' "Compare and Contrast"
table (backend, precision, bandwidth, tok/s, $ per 1M output tokens at one request and at
the highest concurrency, tool calls, quality) plus what explains the spread: the share of
the memory-bandwidth roofline each run reached, memory, and the billable minutes of the
run with their cost. Every row also carries its ratio to a chosen baseline run.
"""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

from runners import hardware
from runners.cost.phase import idle_cost
from runners.results import ab, groups
from runners.results import charts as chart_pngs
from runners.results.validate import SummaryInvalid, check_summary

SUMMARY_SCHEMA = "benchstack.summary/1"
ROOFLINE_FLAG_BELOW = 0.30  # under this share of the ceiling, the engine is the bottleneck
MEDALS = ("🥇", "🥈", "🥉")


class CompareError(ValueError):
    """A run folder or baseline that cannot be compared; one line, naming the path."""


# ---------------------------------------------------------------- reading runs


def find_summaries(run_dirs: Iterable[str | Path]) -> list[Path]:
    """summary.json of each run folder; a folder without one is searched below
    (so `runs/` or `runs/2026-12-03-e2b-emb4-g6/` compare every run inside)."""
    found: list[Path] = []
    for run_dir in map(Path, run_dirs):
        if not run_dir.is_dir():
            raise CompareError(f"{run_dir}: no such run folder")
        own = run_dir / "summary.json"
        below = [own] if own.is_file() else sorted(run_dir.rglob("summary.json"))
        if not below:
            raise CompareError(f"{run_dir}: no summary.json in it or below it")
        found += [p for p in below if p not in found]
    return found


def load_summary(path: Path) -> dict[str, Any]:
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise CompareError(f"{path}: not valid JSON: {exc}") from None
    except UnicodeDecodeError as exc:
        raise CompareError(f"{path}: not UTF-8 text (byte {exc.object[exc.start]:#04x} at "
                           f"offset {exc.start})") from None
    except OSError as exc:
        raise CompareError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if not isinstance(summary, dict) or summary.get("schema") != SUMMARY_SCHEMA:
        raise CompareError(f"{path}: schema: must be {SUMMARY_SCHEMA!r}")
    for key in ("run_id", "experiment", "backend"):
        if not summary.get(key):
            raise CompareError(f"{path}: {key}: is required")
    try:
        check_summary(summary)
    except SummaryInvalid as exc:
        raise CompareError(f"{path}: {exc}") from None
    return summary


# ---------------------------------------------------------------- one row per run


def _label(summary: dict[str, Any]) -> str:
    backend, itype = summary["backend"], (summary.get("placement") or {}).get("instance_type")
    names = {"ec2": "EC2", "sagemaker": "SageMaker", "bedrock": "Bedrock", "local": "local",
             "openai": "OpenAI-compatible"}
    detail = itype or (summary.get("model") or {}).get("served_name") or ""
    return f"{names.get(backend, backend)} {detail}".strip()


def _bandwidth_gb_per_s(summary: dict[str, Any]) -> float | None:
    itype = (summary.get("placement") or {}).get("instance_type")
    if not itype:
        # Local: the host's copy bandwidth measured at provision; Bedrock: not disclosed.
        return (summary.get("host") or {}).get("memory_bandwidth_gb_per_s")
    try:
        return hardware.lookup(itype).bandwidth_gb_per_s
    except hardware.UnknownInstanceType:
        return None


def weights_gib(summary: dict[str, Any]) -> tuple[float | None, str | None]:
    """Bytes read per decoded token, approximated by the weights: what the engine
    reported (memory.weights_gib), else the model size the run recorded (model.weights_gib)."""
    for block, where in (("memory", "memory.weights_gib"), ("model", "model.weights_gib")):
        value = (summary.get(block) or {}).get("weights_gib")
        if value:
            return value, where
    return None, None


def _idle(summary: dict[str, Any], usd_per_hour: float | None) -> dict[str, Any]:
    """Billable minutes from the final timeline when teardown has finished (the cost
    phase ran before teardown and could only record a floor)."""
    timeline = summary.get("timeline") or {}
    if timeline.get("provision_started_at") and timeline.get("teardown_finished_at"):
        idle = idle_cost(timeline, usd_per_hour, now=datetime.now(timezone.utc))
        if "missing" in idle:
            raise ValueError(idle["missing"])
        return idle | {"final": True}
    recorded = (summary.get("cost") or {}).get("idle") or {}
    return {"billable_minutes": recorded.get("billable_minutes"), "usd": recorded.get("usd"),
            "final": False}


def _fraction(part: Any, whole: Any) -> str | None:
    return f"{part}/{whole}" if whole and part is not None else None


def _toolcalls(summary: dict[str, Any]) -> str | None:
    toolcall = summary.get("toolcall")
    if not toolcall:
        return None
    if not toolcall.get("supported"):
        return "not supported"
    runs = toolcall.get("runs")
    if not runs:
        return "not run"
    return f"{toolcall.get('correct')}/{runs}, filter {toolcall.get('filter_ok')}/{runs}"


def _precision(model: dict[str, Any]) -> str:
    """"int4 (emb4)": what the weights are stored as, and the build when it says more."""
    precision, build = model.get("precision") or "—", model.get("build")
    return f"{precision} ({build})" if build and build != precision else precision


def _price_source(cost: dict[str, Any]) -> str | None:
    source = cost.get("price_source") or {}
    if not source.get("source"):
        return None
    return f"{source['source']} {source.get('fetched_on')} ({source.get('age_days')} d old)"


# Phases whose failure leaves the run's figures untrustworthy or absent (teardown and cost
# failing do not change what was measured; they are flagged instead).
GATING_PHASES = ("provision", "await_ready", "warmup", "decode", "stream", "load", "quality",
                 "toolcall")


def failure(summary: dict[str, Any]) -> str | None:
    """Why a run is listed apart, never ranked: its first failed phase, or that it
    measured nothing; None for a run that can be ranked."""
    phases = summary.get("phases") or {}
    for name in GATING_PHASES:
        outcome = phases.get(name) or {}
        if outcome.get("state") == "failed":
            return f"{name} failed: {outcome.get('detail')}"
    stream, quality = summary.get("stream") or {}, summary.get("quality") or {}
    measured = ((summary.get("decode") or {}).get("tokens_per_s") or any(stream.values()) or
                any(lvl.get("tokens_per_s") for lvl in summary.get("load") or []) or
                quality.get("total"))
    return None if measured else "measured nothing"


def _latency(summary: dict[str, Any]) -> dict[str, Any]:
    """p50, p99 and n of the streamed TTFT, TPOT and end-to-end latency."""
    out: dict[str, Any] = {}
    for key in ("ttft_s", "tpot_s", "e2el_s"):
        dist = (summary.get("stream") or {}).get(key) or {}
        name = key.removesuffix("_s")
        out |= {f"{name}_p50_s": dist.get("p50"), f"{name}_p99_s": dist.get("p99"),
                f"{name}_n": dist.get("n")}
    return out


def token_source(summary: dict[str, Any]) -> str | None:
    """"server usage", or "estimate (stream, load)" naming the phases counted by chunks."""
    sources = summary.get("token_source")
    if not sources:
        return None  # written before token sources were recorded
    estimated = [phase for phase, source in sources.items() if source == "estimate"]
    return f"estimate ({', '.join(estimated)})" if estimated else "server usage"


def _quality_interval(quality: dict[str, Any]) -> str | None:
    pair = quality.get("interval_95")
    return f"{pair[0]:.0%}–{pair[1]:.0%}" if pair else None


def row(summary: dict[str, Any], path: Path) -> dict[str, Any]:
    """Everything the report shows about one run, as plain values (None = not recorded)."""
    cost = summary.get("cost") or {}
    per_million = cost.get("usd_per_million_output_tokens") or {}
    decode = (summary.get("decode") or {}).get("tokens_per_s")
    bandwidth = _bandwidth_gb_per_s(summary)
    weights, weights_from = weights_gib(summary)
    ceiling = share = None
    if bandwidth and weights:
        ceiling = hardware.decode_ceiling_tokens_per_s(bandwidth, weights * hardware.GIB)
        share = hardware.roofline_share(decode, ceiling) if decode else None
    quality = summary.get("quality") or {}
    idle = _idle(summary, cost.get("usd_per_hour"))
    model = summary.get("model") or {}
    return {
        "run_id": summary["run_id"], "experiment": summary["experiment"],
        "path": str(path.parent), "backend": summary["backend"], "label": _label(summary),
        "precision": _precision(model),
        "bandwidth_gb_per_s": bandwidth, "decode_tokens_per_s": decode,
        "roofline_ceiling_tokens_per_s": ceiling, "roofline_share": share,
        "weights_gib": weights, "weights_from": weights_from,
        "kv_cache_tokens": (summary.get("memory") or {}).get("kv_cache_tokens"),
        "load_s": (summary.get("memory") or {}).get("load_s"),
        "usd_per_hour": cost.get("usd_per_hour"),
        "usd_per_million_one_request": per_million.get("one_request"),
        "usd_per_million_highest": per_million.get("highest_concurrency"),
        "highest_concurrency": per_million.get("highest_concurrency_level"),
        "toolcalls": _toolcalls(summary),
        "quality": _fraction(quality.get("correct"), quality.get("total")),
        "quality_interval_95": _quality_interval(quality),
        "quality_correct": quality.get("correct"), "quality_total": quality.get("total"),
        "answers": quality.get("answers") or None,
        "decode_interval_95": (summary.get("decode") or {}).get("interval_95"),
        "best_load_tokens_per_s": max((lvl["tokens_per_s"] for lvl in summary.get("load") or []
                                       if lvl.get("tokens_per_s")), default=None),
        "quality_raw": _fraction(quality.get("correct_raw"), quality.get("total")),
        "failure": failure(summary), "token_source": token_source(summary),
        "teardown_failure": ((summary.get("phases") or {}).get("teardown") or {}).get("detail")
        if ((summary.get("phases") or {}).get("teardown") or {}).get("state") == "failed"
        else None,
        **_latency(summary),
        "billable_minutes": idle["billable_minutes"], "billable_usd": idle["usd"],
        "billable_final": idle["final"],
        "break_even_tokens_per_s": (cost.get("break_even") or {}).get("output_tokens_per_s"),
        "bedrock_usd_per_million_with_input": (cost.get("bedrock") or {}).get(
            "usd_per_million_output_tokens_with_input"),
        "bedrock_input_tokens_per_output_token": (cost.get("bedrock") or {}).get(
            "input_tokens_per_output_token"),
        "price_source": _price_source(cost),
        "degenerate_responses": summary.get("degenerate_responses"),
    }


def _checked_row(path: Path) -> dict[str, Any]:
    summary = load_summary(path)
    try:
        return row(summary, path)
    except ValueError as exc:  # a malformed time or size in an otherwise valid summary
        raise CompareError(f"{path}: {exc}") from None


def _distinct_labels(rows: list[dict[str, Any]]) -> None:
    """Two experiments that would show one label ("local gemma-3-270m") get their
    experiment names added, so no two bars or rows read alike."""
    experiments: dict[str, set[str]] = {}
    for r in rows:
        experiments.setdefault(r["label"], set()).add(r["experiment"])
    for r in rows:
        if len(experiments[r["label"]]) > 1:
            r["label"] = f"{r['label']} ({r['experiment']})"


def sort_key(r: dict[str, Any]) -> tuple:
    """Fastest single-request decode first; then cheapest per token; then run id."""
    decode, usd = r["decode_tokens_per_s"], r["usd_per_million_one_request"]
    return (decode is None, -(decode or 0), usd is None, usd or 0, r["run_id"])


def _ratio(value: float | None, base: float | None) -> float | None:
    return value / base if value is not None and base else None


def with_ratios(rows: list[dict[str, Any]], baseline: dict[str, Any]) -> None:
    for r in rows:
        r["x_decode"] = _ratio(r["decode_tokens_per_s"], baseline["decode_tokens_per_s"])
        r["x_usd_one_request"] = _ratio(r["usd_per_million_one_request"],
                                        baseline["usd_per_million_one_request"])
        r["x_usd_highest"] = _ratio(r["usd_per_million_highest"],
                                    baseline["usd_per_million_highest"])


def _names(r: dict[str, Any]) -> tuple[str, ...]:
    runs = r.get("runs") or [r]
    return (r["experiment"], *(x["run_id"] for x in runs), *(Path(x["path"]).name for x in runs))


def baseline_run(base: dict[str, Any], baseline: str | None) -> dict[str, Any]:
    """The one run answers are compared with: the named run of the baseline's group, else
    its latest."""
    runs = base.get("runs") or [base]
    return next((r for r in runs if baseline in (r["run_id"], Path(r["path"]).name)), runs[-1])


def pick_baseline(rows: list[dict[str, Any]], baseline: str | None,
                  apart: Iterable[dict[str, Any]] = ()) -> dict[str, Any]:
    """The row whose run id, experiment or folder name is `baseline`; default: the first.
    A run listed apart (failed, measured nothing) cannot be the baseline."""
    if baseline is None:
        return rows[0]
    hits = [r for r in rows if baseline in _names(r)]
    failed = [r for r in apart if baseline in _names(r)]
    if not hits and failed:
        raise CompareError(f"baseline {baseline!r} is run {failed[0]['run_id']}, which "
                           f"{failed[0]['failure'].split(':')[0]}; choose a measured run")
    if len(hits) != 1:
        known = ", ".join(f"{r['experiment']} ({r['run_id']})" for r in rows)
        what = "matches no run" if not hits else f"matches {len(hits)} runs; give a run id"
        raise CompareError(f"baseline {baseline!r} {what}; runs: {known}")
    return hits[0]


# ---------------------------------------------------------------- rendering


def _num(value: float | None, digits: int = 1, suffix: str = "") -> str:
    return "—" if value is None else f"{value:,.{digits}f}{suffix}"


def _usd(value: float | None) -> str:
    """The seed's style: 1.69, 10.37, but 0.150 below a dollar."""
    if value is None:
        return "—"
    return f"{value:.2f}" if value >= 1 else f"{value:.3f}"


def _times(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}x"


def _roofline(r: dict[str, Any]) -> str:
    share = r["roofline_share"]
    if share is None:
        return "—"
    mark = " ⚠" if share < ROOFLINE_FLAG_BELOW else (" ↑" if share > 1 else "")
    return f"{share:.0%}{mark}"


def flags(rows: list[dict[str, Any]]) -> list[str]:
    """Lines that explain marks in the table."""
    lines = []
    for r in rows:
        if r["teardown_failure"]:
            lines.append(f"⚠ {r['label']} (run {r['run_id']}): teardown failed "
                         f"({r['teardown_failure']}); check that nothing is left billing.")
        if r["bedrock_usd_per_million_with_input"] is not None:
            lines.append(f"{r['label']} bills per token: its $ per 1M counts output tokens only; "
                         f"with {r['bedrock_input_tokens_per_output_token']:g} input tokens per "
                         f"output token it is {_usd(r['bedrock_usd_per_million_with_input'])} "
                         "(an instance's hourly price covers its input tokens; break-even uses "
                         "this figure).")
        share = r["roofline_share"]
        if share is None:
            continue
        basis = (f"{r['bandwidth_gb_per_s']:,.0f} GB/s over {r['weights_gib']:.2f} GiB "
                 f"({r['weights_from']}) = {r['roofline_ceiling_tokens_per_s']:,.1f} tok/s ceiling")
        if share < ROOFLINE_FLAG_BELOW:
            lines.append(f"⚠ {r['label']} decodes at {share:.0%} of its bandwidth roofline "
                         f"({basis}): the serving stack, not the chip, sets its speed.")
        elif share > 1:
            lines.append(f"↑ {r['label']} decodes above its weights-based ceiling ({share:.0%}; "
                         f"{basis}): fewer bytes are read per token than the weights hold "
                         "(embedding tables read one row; experts that sit idle).")
    return lines


def _table(header: list[str], body: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cells) + " |" for cells in body]
    return "\n".join(lines)


def _pair(p50: float | None, p99: float | None, scale: float, digits: int) -> str:
    if p50 is None:
        return "—"
    return f"{_num(p50 * scale, digits)} / {_num(None if p99 is None else p99 * scale, digits)}"


def latency_table(rows: list[dict[str, Any]]) -> str:
    """Streamed latency p50 / p99 with n, and where each run's token counts came from."""
    return _table(
        ["Backend", "Run", "TTFT p50 / p99 (ms)", "TPOT p50 / p99 (ms)", "E2EL p50 / p99 (s)",
         "n", "Tokens from"],
        [[r["label"], r["run_id"], _pair(r["ttft_p50_s"], r["ttft_p99_s"], 1000, 1),
          _pair(r["tpot_p50_s"], r["tpot_p99_s"], 1000, 2),
          _pair(r["e2el_p50_s"], r["e2el_p99_s"], 1, 3),
          "—" if r["ttft_n"] is None else str(r["ttft_n"]), r["token_source"] or "not recorded"]
         for r in rows])


def failed_table(apart: list[dict[str, Any]]) -> list[str]:
    """Runs that failed or measured nothing: listed with why, never ranked."""
    if not apart:
        return []
    return ["## Failed or measured nothing (not ranked)", _table(
        ["Backend", "Experiment", "Run", "Failure", "Decode tok/s measured"],
        [[r["label"], r["experiment"], r["run_id"], r["failure"].replace("|", "\\|"),
          _num(r["decode_tokens_per_s"])] for r in apart])]


def markdown(rows: list[dict[str, Any]], baseline: dict[str, Any] | None,
             apart: list[dict[str, Any]] = (), runs: list[dict[str, Any]] | None = None,
             base_run: dict[str, Any] | None = None) -> str:
    """`rows`: the ranked rows (one per experiment, grouped); `runs`: every ranked run."""
    runs = rows if runs is None else runs
    if not rows:
        return "\n\n".join([f"# Compare: {len(apart)} runs, none measured",
                             *failed_table(list(apart))]) + "\n"
    levels = {r["highest_concurrency"] for r in rows if r["highest_concurrency"]}
    # One shared level goes in the header ("at 16"); mixed levels go in each cell.
    at = f"at {min(levels)}" if len(levels) == 1 else "highest concurrency"
    main = _table(
        ["Backend", "Runs", "Precision served", "Bandwidth", "tok/s", "Roofline",
         "$ per 1M output tokens, 1 request", f"$ per 1M output tokens, {at}", "Tool calls",
         "Quality", "tok/s vs baseline", "$/1M (1) vs baseline", f"$/1M ({at}) vs baseline"],
        [[(MEDALS[i] + " " if i < len(MEDALS) else "") + r["label"], str(r.get("n_runs", 1)),
          r["precision"],
          _num(r["bandwidth_gb_per_s"], 0, " GB/s") if r["bandwidth_gb_per_s"] else "not disclosed"
          if r["backend"] == "bedrock" else "—",
          _num(r["decode_tokens_per_s"]), _roofline(r), _usd(r["usd_per_million_one_request"]),
          _usd(r["usd_per_million_highest"]) + (f" ({r['highest_concurrency']})"
                                                if len(levels) > 1 and r["highest_concurrency"] else ""),
          r["toolcalls"] or "—", (r["quality"] or "—") + (f" ({r['quality_interval_95']})"
                                                           if r["quality_interval_95"] else ""),
          _times(r["x_decode"]), _times(r["x_usd_one_request"]),
          _times(r["x_usd_highest"])] for i, r in enumerate(rows)])
    memory = _table(
        ["Backend", "Weights", "KV cache", "Model load", "$/hour", "Break-even vs Bedrock"],
        [[r["label"], _num(r["weights_gib"], 2, " GiB"),
          _num(r["kv_cache_tokens"], 0, " tokens"), _num(r["load_s"], 1, " s"),
          _num(r["usd_per_hour"], 4),
          _num(r["break_even_tokens_per_s"], 0, " tok/s")] for r in rows])
    billable = _table(
        ["Backend", "Run", "Billable minutes", "Cost of the run", "Prices"],
        [[r["label"], r["run_id"], _num(r["billable_minutes"]) + ("" if r["billable_final"]
                                                                  or r["billable_minutes"] is None
                                                                  else " (floor)"),
          "—" if r["billable_usd"] is None else f"${r['billable_usd']:.2f}", r["price_source"] or "—"]
         for r in runs])
    parts = [
        f"# Compare: {len(runs) + len(apart)} runs"
        + (f", {len(apart)} of them failed or measured nothing" if apart else ""),
        f"Sorted in code by single-request decode rate, fastest first. Baseline for the ratios: "
        f"{baseline['label']} ({baseline['experiment']}, run {baseline['run_id']}).",
        main,
        "Roofline: measured decode / (accelerator bandwidth / weight bytes). ⚠ under "
        f"{ROOFLINE_FLAG_BELOW:.0%}; ↑ above 100%.",
        *flags(rows),
        "## Latency (streamed, one request at a time)",
        "n: streamed requests behind each percentile. Tokens from: the server's usage block, "
        "or an estimate of one token per streamed chunk (phases named) when it sent none.",
        latency_table(runs),
        *groups.markdown(rows),
        *ab.markdown(runs, base_run or baseline, {g["experiment"]: g for g in rows}),
        *failed_table(list(apart)),
        "## Memory and price",
        memory,
        "## Billable time",
        "An endpoint or instance bills from provision to teardown, busy or idle.",
        billable,
    ]
    return "\n\n".join(parts) + "\n"


CSV_FIELDS = (
    "run_id", "experiment", "backend", "label", "precision", "bandwidth_gb_per_s",
    "decode_tokens_per_s", "roofline_ceiling_tokens_per_s", "roofline_share", "weights_gib",
    "weights_from", "kv_cache_tokens", "load_s", "usd_per_hour", "usd_per_million_one_request",
    "usd_per_million_highest", "highest_concurrency", "bedrock_usd_per_million_with_input",
    "toolcalls", "quality",
    "billable_minutes", "billable_usd", "billable_final", "break_even_tokens_per_s",
    "price_source", "degenerate_responses", "x_decode", "x_usd_one_request", "x_usd_highest",
    "quality_interval_95", "quality_raw", "ttft_p50_s", "ttft_p99_s", "ttft_n", "tpot_p50_s",
    "tpot_p99_s", "tpot_n", "e2el_p50_s", "e2el_p99_s", "e2el_n", "token_source", "failure",
    "path",
)


def csv_text(rows: list[dict[str, Any]]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({k: round(v, 6) if isinstance(v, float) else v
                         for k, v in r.items() if k in CSV_FIELDS})
    return out.getvalue()


def charts(rows: list[dict[str, Any]], out_dir: Path) -> tuple[list[Path], str | None]:
    """Bar charts of decode rate and $/1M (runners/results/charts.py); (paths, None), or
    ([], why they were skipped)."""
    pngs, skipped = chart_pngs.compare_charts(rows)
    if skipped:
        return [], skipped
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, png in pngs.items():
        (out_dir / name).write_bytes(png)
    return [out_dir / name for name in pngs], None


def compare(run_dirs: Iterable[str | Path], baseline: str | None = None,
            out_dir: str | Path = "runs/compare") -> dict[str, Any]:
    """Write compare.md, compare.csv and charts/ into `out_dir` (which must not already
    hold a report: nothing is overwritten). Returns the paths, the rows, and why charts
    were skipped (None when they were drawn)."""
    paths = find_summaries(run_dirs)
    every = sorted((_checked_row(p) for p in paths), key=sort_key)
    runs = [r for r in every if not r["failure"]]
    apart = [r for r in every if r["failure"]]
    _distinct_labels(every)
    rows = sorted(groups.group(runs), key=sort_key)
    base = pick_baseline(rows, baseline, apart) if rows else None
    if base:
        with_ratios(rows, base)
        with_ratios(runs, base)  # compare.csv keeps one line per run
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise CompareError(f"{out}: --out names a file; give an output folder")
    targets = {"markdown": out / "compare.md", "csv": out / "compare.csv"}
    existing = [str(p) for p in targets.values() if p.exists()]
    if existing:
        raise CompareError(f"{existing[0]}: exists; give another output folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CompareError(f"{out}: cannot make the output folder: "
                           f"{exc.strerror or exc}") from None
    text = markdown(rows, base, apart, runs, base and baseline_run(base, baseline))
    targets["markdown"].write_text(text, encoding="utf-8")
    targets["csv"].write_text(csv_text(runs + apart), encoding="utf-8")
    chart_paths, skipped = charts(rows, out / "charts")
    return {**targets, "charts": chart_paths, "charts_skipped": skipped, "rows": rows,
            "apart": apart, "baseline": base and base["run_id"]}
