"""The report's telemetry: what the engine allocated (the seed's "What the engine
allocates"), what the server saw during each load level, what SageMaker measured on the
managed path, how busy the accelerator was, and when the container became healthy.

Every figure names its source (engine log, /metrics, CloudWatch, device); a source that
is missing is stated with its reason, never left blank.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from runners import hardware
from runners.results.workload_section import level_name
from runners.telemetry import device, engine_log

TELEMETRY = "telemetry/"
ENGINE_LOGS = ("engine.log", "engine-log.jsonl")
DEVICE_FILES = ("nvidia-smi.csv", "neuron-monitor.jsonl")
LOCAL_MEMORY_SOURCE = ("local provider: GGUF file size; KV cache cells from llama.cpp's "
                       "startup lines (runners/providers/local.py engine_facts)")


def _epoch(iso: str | None) -> float | None:
    if not iso:
        return None
    return dt.datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


# ---------------------------------------------------------------- reading the run folder


def read_telemetry(store, prefix: str, keys: set[str]) -> dict[str, Any]:
    """The files teardown copied (runners/workflow/telemetry_collect.py), parsed."""
    out: dict[str, Any] = {"index": None, "engine": None, "device": None, "metrics": None}
    if prefix + "telemetry.json" in keys:
        out["index"] = store.get_json(prefix + "telemetry.json")
    for name in ENGINE_LOGS:
        key = prefix + TELEMETRY + name
        if key in keys:
            text = store.get_bytes(key).decode("utf-8", errors="replace")
            items = ([json.loads(line) for line in text.splitlines() if line.strip()]
                     if name.endswith(".jsonl") else text.splitlines())
            out["engine"] = engine_log.parse(items, f"engine log: {store.uri(key)}")
    for name in DEVICE_FILES:
        key = prefix + TELEMETRY + name
        if key in keys:
            kind, rows = device.parse_samples(name, store.get_bytes(key).decode(
                "utf-8", errors="replace"))
            out["device"] = {"kind": kind, "rows": rows, "source": f"device: {store.uri(key)}"}
    key = prefix + TELEMETRY + "cloudwatch-metrics.json"
    if key in keys:
        out["metrics"] = store.get_json(key)
    return out


def _missing(index: dict | None, names: tuple[str, ...], default: str) -> str:
    why = [(index or {}).get("missing", {}).get(n) for n in names]
    why = [w for w in why if w]
    return why[0] if why else default


# ---------------------------------------------------------------- summary.json


def memory(files: dict[str, Any], placement: dict[str, Any]) -> dict[str, Any]:
    """summary.json `memory`: the engine's own figures with their source."""
    tele = files.get("telemetry") or {}
    facts = tele.get("engine") or placement.get("engine_facts")
    if facts and facts.get("engine"):
        return engine_log.memory_block(facts, "")
    if placement.get("memory"):  # the local backend's own figures
        local = placement["memory"]
        return {**engine_log.memory_block(None, ""), **local, "source": LOCAL_MEMORY_SOURCE,
                "missing": "llama.cpp logs no load, compile or profiling figures"}
    backend = ((files.get("manifest") or {}).get("experiment") or {}).get("backend")
    why = (placement.get("engine_facts") or {}).get("missing") or _missing(
        tele.get("index"), ENGINE_LOGS, "no engine log: none was collected for this run")
    if backend == "bedrock":
        why = "no engine log: Bedrock does not expose its engine"
    elif backend == "openai":
        why = "no engine log: an OpenAI-compatible endpoint exposes no engine log"
    if not why.startswith("no engine log"):
        why = f"no engine log: {why}"
    return engine_log.memory_block(None, why)


def _stats_window(stats: list[dict], start_s: float, end_s: float) -> list[dict]:
    out = []
    for row in stats:
        at = row.get("at")
        t = _epoch(at) if at and at[:4].isdigit() else None
        if t is not None and start_s <= t <= end_s + 10:  # a line closes 10 s after its data
            out.append(row)
    return out


def _peak(rows: list[dict], key: str) -> float | None:
    values = [r[key] for r in rows if r.get(key) is not None]
    return max(values) if values else None


def server_levels(files: dict[str, Any]) -> list[dict[str, Any]]:
    """Per load level: queue depth and KV usage as the server saw them, with the source:
    /metrics scraped around the level, else the engine's periodic stats lines."""
    levels = (files.get("load") or {}).get("levels") or []
    engine = (files.get("telemetry") or {}).get("engine") or {}
    stats = engine.get("stats") or []
    out = []
    for lvl in levels:
        row: dict[str, Any] = {"level": level_name(lvl), "concurrency": lvl.get("concurrency"),
                               "client_tokens_per_s": lvl.get("tokens_per_s")}
        server = lvl.get("server") or {}
        window = lvl.get("window") or {}
        if server.get("samples"):
            row.update({k: server.get(k) for k in (
                "running_peak", "waiting_peak", "kv_cache_usage_pct_peak", "preemptions",
                "prefix_cache_hit_pct", "server_ttft_mean_s", "server_itl_mean_s")})
            row["source"] = server["source"]
        elif stats and window.get("start_s"):
            inside = _stats_window(stats, window["start_s"], window["end_s"])
            row.update({"running_peak": _peak(inside, "running"),
                        "waiting_peak": _peak(inside, "waiting"),
                        "kv_cache_usage_pct_peak": _peak(inside, "kv_cache_usage_pct"),
                        "preemptions": None, "prefix_cache_hit_pct":
                            _peak(inside, "prefix_cache_hit_pct"),
                        "server_ttft_mean_s": None, "server_itl_mean_s": None,
                        "source": f"{engine['source']}: {len(inside)} stats lines"})
        else:
            row["source"] = None
            row["missing"] = (server.get("missing") or
                              "no server figures: no /metrics and no engine stats lines")
        out.append(row)
    return out


def endpoint_metrics(files: dict[str, Any]) -> dict[str, Any] | None:
    tele = files.get("telemetry") or {}
    backend = ((files.get("manifest") or {}).get("experiment") or {}).get("backend")
    if backend != "sagemaker":
        return None
    found = tele.get("metrics")
    if not found:
        return {"source": None, "missing": _missing(
            tele.get("index"), ("cloudwatch-metrics.json",),
            "no CloudWatch metrics: none were collected for this run")}
    return {"source": found["source"], "missing": found.get("missing", {}),
            **{k: {"value": v["value"], "peak": v["peak"], "unit": v["unit"]}
               for k, v in found["metrics"].items()}}


PHASE_NAMES = ("warmup", "decode", "stream", "context", "load", "quality", "toolcall")


def device_phases(files: dict[str, Any]) -> dict[str, Any] | None:
    tele = files.get("telemetry") or {}
    samples = tele.get("device")
    backend = ((files.get("manifest") or {}).get("experiment") or {}).get("backend")
    if not samples:
        if backend != "ec2":
            return None
        return {"source": None, "missing": _missing(
            tele.get("index"), ("nvidia-smi.csv", "neuron-monitor.jsonl", "device-missing.txt"),
            "no device samples: none were collected for this run")}
    phases = {}
    for name in PHASE_NAMES:
        data = files.get(name) or {}
        start, end = _epoch(data.get("started_at")), _epoch(data.get("finished_at"))
        if start is not None and end is not None:
            phases[name] = device.window_summary(samples["rows"], start, end, samples["kind"])
    return {"source": samples["source"], "kind": samples["kind"], "phases": phases}


def summary_fields(files: dict[str, Any], placement: dict[str, Any]) -> dict[str, Any]:
    """summary.json `memory` and `telemetry`. The await_ready placement is the one that
    saw the endpoint become ready (engine facts, container health, the full timeline)."""
    placement = (files.get("await_ready") or {}).get("placement") or placement
    timeline = {e["event"]: e["at"] for e in placement.get("timeline") or []}
    mem = memory(files, placement)
    return {"memory": mem, "telemetry": {
        # where each block of summary.json comes from; the blocks below carry their own
        "sources": {"decode": "client", "stream": "client", "load": "client",
                    "quality": "client", "toolcall": "client", "memory": mem.get("source")},
        "container_healthy_at": placement.get("container_healthy_at"),
        "in_service_at": timeline.get("in_service"),
        "server_load": server_levels(files),
        "endpoint_metrics": endpoint_metrics(files),
        "device": device_phases(files),
    }}


# ---------------------------------------------------------------- Markdown

ENGINE_ROWS = (
    ("vllm_version", "vLLM version", "{}"), ("weights_gib", "GPU weights", "{:.2f} GiB"),
    ("kv_cache_tokens", "KV cache", "{:,} tokens"),
    ("max_concurrency", "max concurrency at max_model_len", "{:.2f}x"),
    ("available_kv_gib", "memory available for KV cache", "{:.2f} GiB"),
    ("peak_activation_gib", "peak activation (profiling run)", "{:.2f} GiB"),
    ("load_s", "model load", "{:.1f} s"), ("torch_compile_s", "torch.compile", "{:.1f} s"),
    ("engine_init_s", "engine init (profile, KV cache, warmup)", "{:.1f} s"),
)


def _fmt(fmt: str, value: Any) -> str:
    return "—" if value is None else fmt.format(value)


def _engine_lines(mem: dict[str, Any]) -> list[str]:
    lines = ["## What the engine allocates", "",
             "The figures above (decode, stream, load, quality, tool call) are the client's; "
             "each one below names its own source.", ""]
    if not mem.get("source"):
        return lines + [mem.get("missing") or "no engine log", ""]
    missing = mem.get("missing") if isinstance(mem.get("missing"), dict) else {}
    lines += ["| figure | value | source |", "|---|---|---|"]
    for key, label, fmt in ENGINE_ROWS:
        if key == "vllm_version" and mem.get("engine") != "vllm":
            continue
        if key == "max_concurrency" and mem.get("max_model_len"):
            label = f"max concurrency at {mem['max_model_len']:,} tokens"
        if key == "weights_gib" and mem.get("engine") != "vllm":
            label = "weights"
        value = mem.get(key)
        if value is None and (not missing or mem.get("engine") != "vllm"):
            continue  # no engine log, or a vLLM-only figure: only the figures there are
        source = mem["source"] if value is not None else (
            f"missing: {missing.get(key) or 'not in the log'}")
        lines.append(f"| {label} | {_fmt(fmt, value)} | {source} |")
    if isinstance(mem.get("missing"), str):
        lines += ["", mem["missing"]]
    return lines + [""]


def _server_lines(rows: list[dict[str, Any]]) -> list[str]:
    if not rows:
        return []
    lines = ["## Server during load", "",
             "| level | client tokens/s | running (peak) | waiting (peak) | "
             "KV cache usage (peak) | preemptions | source |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        if r.get("source") is None:
            lines.append(f"| {r['level']} | {_fmt('{:.1f}', r['client_tokens_per_s'])} "
                         f"| — | — | — | — | {r['missing']} |")
            continue
        lines.append(
            f"| {r['level']} | {_fmt('{:.1f}', r['client_tokens_per_s'])} | "
            f"{_fmt('{:g}', r.get('running_peak'))} | {_fmt('{:g}', r.get('waiting_peak'))} | "
            f"{_fmt('{:.1f}%', r.get('kv_cache_usage_pct_peak'))} | "
            f"{_fmt('{:g}', r.get('preemptions'))} | {r['source']} |")
    return lines + [""]


METRIC_ROWS = (("overhead_latency_ms", "OverheadLatency (mean of 1-min averages)", "{:.1f} ms"),
               ("model_latency_ms", "ModelLatency (mean of 1-min averages)", "{:.1f} ms"),
               ("invocations", "Invocations", "{:,.0f}"),
               ("invocation_4xx_errors", "4xx errors", "{:,.0f}"),
               ("invocation_5xx_errors", "5xx errors", "{:,.0f}"),
               ("model_setup_time_ms", "ModelSetupTime", "{:.0f} ms"),
               ("gpu_utilization_pct", "GPUUtilization (mean)", "{:.1f}%"),
               ("gpu_memory_utilization_pct", "GPUMemoryUtilization (mean)", "{:.1f}%"),
               ("cpu_utilization_pct", "CPUUtilization (mean)", "{:.1f}%"))


def _metrics_lines(found: dict[str, Any] | None, intercept_s: float | None) -> list[str]:
    if found is None:
        return []
    lines = ["## Managed path (SageMaker CloudWatch metrics)", ""]
    if not found.get("source"):
        return lines + [found["missing"], ""]
    overhead = (found.get("overhead_latency_ms") or {}).get("value")
    if overhead is not None and intercept_s is not None:
        lines += [f"SageMaker's OverheadLatency is {overhead:.1f} ms per request; the client's "
                  f"decode intercept (per-call fixed cost) is {intercept_s * 1000:.1f} ms, "
                  f"so {max(intercept_s * 1000 - overhead, 0):.1f} ms of it lies outside "
                  "SageMaker (signing, network, client).", ""]
    lines += ["| metric | value | source |", "|---|---|---|"]
    for key, label, fmt in METRIC_ROWS:
        entry = found.get(key)
        if entry:
            lines.append(f"| {label} | {fmt.format(entry['value'])} | {found['source']} |")
        else:
            lines.append(f"| {label} | — | missing: {found['missing'].get(key, 'no data')} |")
    return lines + [""]


def _device_lines(found: dict[str, Any] | None, summary: dict[str, Any]) -> list[str]:
    if found is None:
        return []
    lines = ["## Accelerator over the phases", ""]
    if not found.get("source"):
        return lines + [found["missing"], ""]
    if found["kind"] == "nvidia-smi":
        lines += ["| phase | samples | GPU busy (mean) | memory controller busy (mean) | "
                  "power (mean) | memory used (peak) |", "|---|---|---|---|---|---|"]
        for name, p in found["phases"].items():
            lines.append(f"| {name} | {p['samples']} | "
                         f"{_fmt('{:.0f}%', p['utilization_gpu_pct_mean'])} | "
                         f"{_fmt('{:.0f}%', p['utilization_memory_pct_mean'])} | "
                         f"{_fmt('{:.0f} W', p['power_draw_w_mean'])} | "
                         f"{_fmt('{:,.0f} MiB', p['memory_used_mib_peak'])} |")
    else:
        lines += ["| phase | samples | NeuronCore busy (mean) | device memory (peak) |",
                  "|---|---|---|---|"]
        for name, p in found["phases"].items():
            peak = p["device_memory_used_bytes_peak"]
            lines.append(f"| {name} | {p['samples']} | {_fmt('{:.0f}%', p['utilization_pct_mean'])}"
                         f" | {_fmt('{:.2f} GiB', peak and peak / hardware.GIB)} |")
    share = roofline_share(summary)
    decode = found["phases"].get("decode") or {}
    busy = decode.get("utilization_memory_pct_mean")
    if share is not None:
        lines += ["", f"Decode reached {share:.0%} of the bandwidth roofline (client figure); "
                  + (f"the memory controller was busy {busy:.0f}% of the decode phase "
                     "(nvidia-smi utilization.memory: time busy, an upper bound on bandwidth "
                     "used)." if busy is not None else "no memory-busy figure for decode.")]
    return lines + ["", f"Source: {found['source']} (1 Hz)", ""]


def roofline_share(summary: dict[str, Any]) -> float | None:
    itype = (summary.get("placement") or {}).get("instance_type")
    weights = (summary.get("memory") or {}).get("weights_gib")
    decode = (summary.get("decode") or {}).get("tokens_per_s")
    if not (itype and weights and decode):
        return None
    try:
        bandwidth = hardware.lookup(itype).bandwidth_gb_per_s
    except hardware.UnknownInstanceType:
        return None
    ceiling = hardware.decode_ceiling_tokens_per_s(bandwidth, weights * hardware.GIB)
    return hardware.roofline_share(decode, ceiling)


def _timeline_lines(tele: dict[str, Any]) -> list[str]:
    healthy, in_service = tele.get("container_healthy_at"), tele.get("in_service_at")
    if not healthy and not in_service:
        return []
    lines = ["## Container healthy vs InService", ""]
    lines.append(f"- container answered /ping 200: {healthy or '— (not seen in the log)'}")
    lines.append(f"- endpoint InService: {in_service or '—'}")
    if healthy and in_service:
        lag = (_epoch(in_service) - _epoch(healthy)) / 60
        lines.append(f"- InService came {lag:.1f} min after the container was healthy")
    return lines + [""]


def lines(summary: dict[str, Any], files: dict[str, Any] | None = None) -> list[str]:
    """The report's telemetry sections (a report.SECTIONS entry)."""
    tele = summary.get("telemetry") or {}
    return (_engine_lines(summary.get("memory") or {}) + _timeline_lines(tele)
            + _server_lines(tele.get("server_load") or [])
            + _metrics_lines(tele.get("endpoint_metrics"),
                             (summary.get("decode") or {}).get("intercept_s"))
            + _device_lines(tele.get("device"), summary))



def device_figure(plt, summary: dict[str, Any], files: dict[str, Any]):
    """Accelerator utilization over the run, each measuring phase shaded and named; None
    without device samples (results/charts.py turns the figure into the PNG)."""
    samples = (files.get("telemetry") or {}).get("device")
    if not samples or not samples["rows"]:
        return None
    rows, t0 = samples["rows"], samples["rows"][0]["t"]
    keys = (("utilization_gpu_pct", "GPU busy %"), ("utilization_memory_pct",
                                                    "memory controller busy %")) \
        if samples["kind"] == "nvidia-smi" else (("utilization_pct", "NeuronCore busy %"),)
    fig, ax = plt.subplots(figsize=(8, 3.5))
    for key, label in keys:
        ax.plot([r["t"] - t0 for r in rows], [r[key] for r in rows], lw=1, label=label)
    for i, name in enumerate(PHASE_NAMES):
        data = files.get(name) or {}
        start, end = _epoch(data.get("started_at")), _epoch(data.get("finished_at"))
        if start is not None and end is not None:  # neighbouring phases in alternate greys
            ax.axvspan(start - t0, end - t0, color="0.5" if i % 2 else "0.8", alpha=0.25)
            ax.text((start + end) / 2 - t0, 102, name, ha="center", fontsize=7)
    ax.set(xlabel="seconds since the first sample", ylabel="%", ylim=(0, 110),
           title=f"Accelerator over the phases — run {summary.get('run_id')}\n"
                 f"{samples['kind']}, 1 Hz, n = {len(rows)} samples")
    ax.legend(loc="lower right", fontsize=7)
    return fig
