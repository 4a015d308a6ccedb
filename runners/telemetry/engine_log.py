"""What the engine said at start-up: facts read from a vLLM or llama.cpp log.

A line is read plain or with the prefixes that CloudWatch and vLLM put in front of it:
a CloudWatch timestamp (and log stream, as `aws logs tail` prints), ANSI colours, vLLM's
process tag `(EngineCore_DP0 pid=301)`, and its logger prefix `INFO 10-12 00:17:46
[gpu_model_runner.py:2653]` (older releases: `INFO 05-30 16:23:22 model_runner.py:1115]`).

Each fact comes from a message format copied from the engine's source (FORMATS below
names the file). A line that names a fact in a format this module does not know leaves
the fact missing with that line quoted: it is never guessed. Where a log holds more than
one start-up (a reused log group) the last one counts.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
# CloudWatch: an ISO timestamp (FilterLogEvents exports, `aws logs tail`), optionally the
# log stream (SageMaker's are `AllTraffic/i-...`); or a bare HH:MM:SS as the seed quotes it.
_CLOUDWATCH = re.compile(
    r"^(?P<cw>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?|\d\d:\d\d:\d\d)"
    r"\s+(?:(?P<stream>[\w.-]+/[\w./-]+)\s+)?")
# journalctl -o short-iso (the EC2 boot script's engine.log): "<host> <identifier>[<pid>]: "
_JOURNAL = re.compile(r"^[\w.-]+ [\w@./-]+\[\d+\]: ")
_PROCESS = re.compile(r"^\((?P<process>[A-Za-z][\w-]*(?: rank=\d+)? pid=\d+)\)\s+")
# vllm/logger.py: "%(levelname)s %(asctime)s [%(fileinfo)s:%(lineno)d] %(message)s" with
# datefmt "%m-%d %H:%M:%S"; releases before the brackets: "... %(filename)s:%(lineno)d]".
_VLLM_PREFIX = re.compile(
    r"^(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) (?P<ts>\d\d-\d\d \d\d:\d\d:\d\d)"
    r"(?:\.\d+)? \[?(?P<src>[\w./-]+\.py:\d+)\] ")
# uvicorn's default formatter: "%(levelprefix)s %(message)s", level padded to 9 columns.
_UVICORN_PREFIX = re.compile(r"^(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL):\s+")
# uvicorn access log: '%s - "%s %s HTTP/%s" %d' (client, method, path, version, status)
ACCESS = re.compile(r'^(?P<client>\S+) - "(?P<method>[A-Z]+) (?P<path>\S+) HTTP/[\d.]+" '
                    r"(?P<status>\d{3})")
SERVED_PATHS = ("/invocations", "/v1/chat/completions", "/v1/completions")


@dataclass(frozen=True)
class Line:
    number: int  # 1-based, over the lines read
    message: str
    at: str | None  # CloudWatch time when known, else the engine's own "MM-DD HH:MM:SS"
    process: str | None = None
    level: str | None = None
    source: str | None = None


def split_line(number: int, raw: str, at: str | None = None) -> Line:
    """One log line without its prefixes."""
    text = _ANSI.sub("", raw).rstrip("\r\n")
    if m := _CLOUDWATCH.match(text):
        at = at or m["cw"]
        text = text[m.end():]
        if j := _JOURNAL.match(text):
            text = text[j.end():]
    process = level = source = None
    if m := _PROCESS.match(text):
        process, text = m["process"], text[m.end():]
    if m := _VLLM_PREFIX.match(text):
        level, source, text = m["level"], m["src"], text[m.end():]
        at = at or m["ts"]
    elif m := _UVICORN_PREFIX.match(text):
        level, text = m["level"], text[m.end():]
    return Line(number, text.strip(), at, process, level, source)


def read_lines(items: Iterable[str | dict[str, Any]]) -> list[Line]:
    """Lines from text lines or CloudWatch events ({"timestamp_ms", "message"}); an event
    holding several lines (vLLM's logo) is split, each keeping the event's time."""
    lines: list[Line] = []
    for item in items:
        if isinstance(item, dict):
            at = iso_from_ms(item["timestamp_ms"]) if item.get("timestamp_ms") else None
            parts = str(item.get("message", "")).splitlines() or [""]
        else:
            at, parts = None, str(item).splitlines() or [""]
        lines += [split_line(len(lines) + 1, part, at) for part in parts]
    return lines


def iso_from_ms(ms: int) -> str:
    import datetime as dt

    moment = dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


# ---------------------------------------------------------------- the known formats


def _f(x: str) -> float:
    return float(x)


def _i(x: str) -> int:
    return int(x.replace(",", ""))


def _args(x: str) -> Any:
    """vLLM prints a Python dict repr; kept JSON-ready (a set or tuple becomes a list, an
    object repr it cannot read keeps the raw text)."""
    try:
        value = ast.literal_eval(x)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return x
    return json.loads(json.dumps(value, default=lambda v: sorted(v, key=str)
                                 if isinstance(v, (set, frozenset)) else str(v)))


@dataclass(frozen=True)
class Format:
    engine: str
    fields: tuple[tuple[str, Callable[[str], Any]], ...]  # one per regex group
    source_format: str  # the format string as the engine's source writes it
    where: str  # the source file that logs it
    pattern: re.Pattern


def _fmt(engine: str, fields, source_format: str, where: str, regex: str) -> Format:
    return Format(engine, tuple(fields), source_format, where, re.compile(regex))


# Copied from the engines' source (vLLM: several releases of the files named).
FORMATS: tuple[Format, ...] = (
    _fmt("vllm", [("vllm_version", str)], "vLLM API server version %s",
         "vllm/entrypoints/openai/api_server.py run_server",
         r"^vLLM API server version (\S+)$"),
    _fmt("vllm", [("vllm_version", str), ("model", str)], "vLLM server version %s, serving model %s",
         "vllm/entrypoints/utils.py log_version_and_model (logo disabled)",
         r"^vLLM server version (\S+), serving model (\S+)$"),
    _fmt("vllm", [("vllm_version", str)], "<logo> version %s",
         "vllm/entrypoints/utils.py log_version_and_model (logo)",
         r"█ ▀▄▀ █\s+version\s+(\S+)$"),
    _fmt("vllm", [("model", str)], "<logo> model   %s",
         "vllm/entrypoints/utils.py log_version_and_model (logo)",
         r"█     █     █     █\s+model\s+(\S+)$"),
    _fmt("vllm", [("vllm_version", str), ("model", str)],
         "Initializing a V1 LLM engine (v%s) with config: %s",
         "vllm/v1/engine/core.py EngineCore.__init__",
         r"^Initializing a V1 LLM engine \(v([^)\s]+)\) with config: model='([^']+)'"),
    _fmt("vllm", [("non_default_args", _args)], "non-default args: %s",
         "vllm/entrypoints/utils.py log_non_default_args",
         r"^non-default args: (\{.*\})$"),
    _fmt("vllm", [("model", str)], "Starting to load model %s...",
         "vllm/v1/worker/gpu_model_runner.py load_model",
         r"^Starting to load model (\S+)\.\.\.$"),
    _fmt("vllm", [("weights_gib", _f), ("load_s", _f)],
         "Model loading took %.4f GiB and %.6f seconds (later %s GiB via format_gib)",
         "vllm/v1/worker/gpu_model_runner.py load_model",
         r"^Model loading took ([\d.]+) GiB and ([\d.]+) seconds$"),
    _fmt("vllm", [("weights_gib", _f), ("load_s", _f)],
         "Model loading took %s GiB memory and %.6f seconds",
         "vllm/v1/worker/gpu_model_runner.py load_model (newer releases)",
         r"^Model loading took ([\d.]+) GiB memory and ([\d.]+) seconds$"),
    _fmt("vllm", [("weights_gib", _f)], "Loading model weights took %.4f GB",
         "vllm/worker/model_runner.py load_model (V0 engine; the value is GiB)",
         r"^Loading model weights took ([\d.]+) GB$"),
    _fmt("vllm", [("available_kv_gib", _f)], "Available KV cache memory: %.2f GiB (later %s GiB)",
         "vllm/v1/worker/gpu_worker.py determine_available_memory",
         r"^Available KV cache memory: ([\d.]+) GiB(?: \(process-scoped\))?$"),
    _fmt("vllm", [("peak_activation_gib", _f), ("available_kv_gib", _f)],
         "...; PyTorch activation peak memory takes %.2fGiB; the rest of the memory "
         "reserved for KV Cache is %.2fGiB.",
         "vllm/worker/worker.py and early vllm/v1/worker/gpu_worker.py (INFO)",
         r"PyTorch activation peak memory takes ([\d.]+)GiB; the rest of the memory "
         r"reserved for KV Cache is (-?[\d.]+)GiB"),
    _fmt("vllm", [("peak_activation_gib", _f)],
         "Memory profiling takes %.2f seconds. Total non KV cache memory: %sGiB; torch peak "
         "memory increase: %sGiB; ...",
         "vllm/utils MemoryProfilingResult.__repr__ (logged at DEBUG by the V1 worker)",
         r"torch peak memory increase: ([\d.]+) ?GiB"),
    _fmt("vllm", [("kv_cache_tokens", _i)], "GPU KV cache size: %s tokens",
         "vllm/v1/core/kv_cache_utils.py",
         r"^GPU KV cache size: ([\d,]+) tokens"),
    _fmt("vllm", [("max_model_len", _i), ("max_concurrency", _f)],
         "Maximum concurrency for %s tokens per request: %.2fx",
         "vllm/v1/core/kv_cache_utils.py (its own line, or after the KV size on one line)",
         r"Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+)x"),
    _fmt("vllm", [("torch_compile_s", _f)], "torch.compile takes %.2f s in total",
         "vllm/compilation/monitor.py end_monitoring_torch_compile",
         r"^torch\.compile takes ([\d.]+) s in total$"),
    _fmt("vllm", [("cuda_graph_s", _f), ("cuda_graph_gib", _f)],
         "Graph capturing finished in %.0f secs, took %.2f GiB",
         "vllm/v1/worker/gpu_model_runner.py capture_model",
         r"^Graph capturing finished in ([\d.]+) secs?, took (-?[\d.]+) GiB$"),
    _fmt("vllm", [("engine_init_s", _f)],
         "init engine (profile, create kv cache, warmup model) took %.2f seconds",
         "vllm/v1/engine/core.py _initialize_kv_caches",
         r"^init engine \(profile, create kv cache, warmup model\) took ([\d.]+) seconds"),
    # llama.cpp (vendored in llama-cpp-python 0.3.36): "%s: " is the logging function.
    _fmt("llama.cpp", [("model", str)], "%s: general.name          = %s",
         "llama.cpp src/llama-model.cpp print_info",
         r"^print_info: general\.name\s+= (.+)$"),
    _fmt("llama.cpp", [("weights_file_gib", _f)], "%s: file size   = %.2f GiB (%.2f BPW)",
         "llama.cpp src/llama-model-loader.cpp print_info",
         r"^print_info: file size\s+= ([\d.]+) GiB \("),
    _fmt("llama.cpp", [("weights_buffer_mib", _f)], "%s: %12s model buffer size = %8.2f MiB",
         "llama.cpp src/llama-model.cpp load_tensors (one line per buffer)",
         r"^load_tensors:\s+\S+ model buffer size =\s+([\d.]+) MiB$"),
    _fmt("llama.cpp", [("n_ctx_train", _i)], "%s: n_ctx_train           = %u",
         "llama.cpp src/llama-model.cpp print_info",
         r"^print_info: n_ctx_train\s+= (\d+)$"),
    _fmt("llama.cpp", [("n_ctx", _i)], "%s: n_ctx                 = %u",
         "llama.cpp src/llama-context.cpp llama_context",
         r"^llama_context: n_ctx\s+= (\d+)$"),
    _fmt("llama.cpp", [("kv_cache_mib", _f), ("kv_cache_tokens", _i)],
         "%s: size = %7.2f MiB (%6u cells, %3d layers, %2u/%u seqs), K (%s): ..., V (%s): ...",
         "llama.cpp src/llama-kv-cache.cpp",
         r"^\w+: size =\s+([\d.]+) MiB \(\s*(\d+) cells,"),
    # llama_perf_context_print's "load time" is left out on purpose: with mmap it times the
    # context set-up (0.22 ms in a real run), not the model load.
)
# A line naming a fact: if no known format read it, the fact is missing with this line.
MENTIONS: dict[str, str] = {
    "weights_gib": "Model loading took", "kv_cache_tokens": "GPU KV cache size",
    "max_concurrency": "Maximum concurrency for", "load_s": "Model loading took", "available_kv_gib": "Available KV cache memory",
    "torch_compile_s": "torch.compile takes", "engine_init_s": "init engine",
    "peak_activation_gib": "peak memory",
}
VLLM_FACTS = ("vllm_version", "model", "non_default_args", "weights_gib", "load_s",
              "kv_cache_tokens", "max_model_len", "max_concurrency", "available_kv_gib",
              "peak_activation_gib", "torch_compile_s", "engine_init_s")
LLAMA_CPP_FACTS = ("model", "weights_gib", "n_ctx_train", "n_ctx", "kv_cache_tokens",
                   "kv_cache_mib")
WHY_MISSING = {
    "peak_activation_gib": "vLLM's V1 worker logs peak activation only at DEBUG "
                           "(VLLM_LOGGING_LEVEL=DEBUG)",
    "torch_compile_s": "logged only when torch.compile runs (not with --enforce-eager)",
}
# Start-up markers, the API server's first line before the engine's: facts, ping and
# requests are taken from the last start-up in the log.
_STARTUPS = (re.compile(r"^(vLLM API server version |vLLM server version )|█ ▀▄▀ █\s+version"),
             re.compile(r"^(Initializing a V1 LLM engine |llama_model_loader: loaded meta data )"))


def _last_startup(lines: list[Line]) -> int:
    for marker in _STARTUPS:
        starts = [i for i, line in enumerate(lines) if marker.search(line.message)]
        if starts:
            return starts[-1]
    return 0


def parse(items: Iterable[str | dict[str, Any]], source: str) -> dict[str, Any]:
    """Facts from a log (text lines or CloudWatch events) as JSON-ready data:
    each fact's value, and under `found` the line, time and format it came from;
    under `missing` why a fact is absent. `source` says where the log was read."""
    lines = read_lines(items)
    lines = lines[_last_startup(lines):]
    values: dict[str, Any] = {}
    found: dict[str, dict[str, Any]] = {}
    engines: set[str] = set()
    buffers_mib: list[float] = []
    for line in lines:
        for fmt in FORMATS:
            m = fmt.pattern.search(line.message)
            if not m:
                continue
            engines.add(fmt.engine)
            for (name, convert), text in zip(fmt.fields, m.groups()):
                if name == "weights_buffer_mib":
                    buffers_mib.append(convert(text))
                    name, value = "weights_gib", sum(buffers_mib) / 1024
                else:
                    value = convert(text)
                values[name] = value
                found[name] = {"line": line.number, "at": line.at, "format": fmt.source_format,
                               "where": fmt.where}
    engine = "vllm" if "vllm" in engines else ("llama.cpp" if engines else None)
    wanted = LLAMA_CPP_FACTS if engine == "llama.cpp" else VLLM_FACTS
    missing = {name: _why_missing(name, lines) for name in wanted if name not in values}
    first_ping, first_request = _first_access(lines)
    out = {"source": source, "engine": engine, "lines": len(lines),
           **{name: values.get(name) for name in wanted},
           "api_ready_at": next((line.at for line in lines
                                 if line.message == "Application startup complete."), None),
           "first_ping_200_at": first_ping, "first_request": first_request,
           "found": found, "missing": missing}
    for extra in ("cuda_graph_s", "cuda_graph_gib", "weights_file_gib", "load_s"):
        if extra in values:
            out[extra] = values[extra]
    out["stats"] = stats_lines(lines)
    return out


def _why_missing(name: str, lines: list[Line]) -> str:
    mention = MENTIONS.get(name)
    near = next((line for line in lines if mention and mention in line.message), None)
    if near is not None:
        return (f"line {near.number} is in a format this parser does not know: "
                f"{near.message[:160]!r}")
    if not lines:
        return "the log is empty"
    return "no line in a known format" + (f"; {WHY_MISSING[name]}" if name in WHY_MISSING
                                          else "")


def _first_access(lines: list[Line]) -> tuple[str | None, dict[str, Any] | None]:
    ping = request = None
    for line in lines:
        m = ACCESS.match(line.message)
        if not m:
            continue
        if ping is None and m["path"] == "/ping" and m["status"] == "200":
            ping = line.at
        if request is None and m["path"].split("?")[0] in SERVED_PATHS:
            request = {"at": line.at, "method": m["method"], "path": m["path"],
                       "status": int(m["status"]), "line": line.number}
        if ping and request:
            break
    return ping, request


# vllm/v1/metrics/loggers.py LoggingStatLogger.log, every VLLM_LOG_STATS_INTERVAL (10 s):
# "Engine %03d: Avg prompt throughput: %.1f tokens/s, Avg generation throughput: %.1f
# tokens/s, Running: %d reqs, Waiting: %d reqs, [Preemptions: %d, ]GPU KV cache usage:
# %.1f%%, Prefix cache hit rate: %.1f%%" (older: no engine index, no prefix cache part).
_STATS_PARTS = {
    "prompt_tokens_per_s": r"Avg prompt throughput: ([\d.]+) tokens/s",
    "generation_tokens_per_s": r"Avg generation throughput: ([\d.]+) tokens/s",
    "running": r"Running: (\d+) reqs",
    "waiting": r"Waiting: (\d+) reqs",
    "preemptions": r"Preemptions: (\d+)",
    "kv_cache_usage_pct": r"GPU KV cache usage: ([\d.]+)%",
    "prefix_cache_hit_pct": r"Prefix cache hit rate: ([\d.]+)%",
}
_STATS_RE = {k: re.compile(v) for k, v in _STATS_PARTS.items()}
STATS_MARK = "Avg generation throughput:"


def stats_lines(lines: Iterable[Line]) -> list[dict[str, Any]]:
    """vLLM's periodic stats lines, one dict each (a part the line lacks is None)."""
    out = []
    for line in lines:
        if STATS_MARK not in line.message or "Avg prompt throughput:" not in line.message:
            continue
        row: dict[str, Any] = {"at": line.at}
        engine = re.match(r"^Engine (\d+): ", line.message)
        row["engine_index"] = int(engine[1]) if engine else None
        for key, pattern in _STATS_RE.items():
            m = pattern.search(line.message)
            row[key] = None if not m else (int(m[1]) if key in ("running", "waiting",
                                                                 "preemptions") else float(m[1]))
        out.append(row)
    return out


def stats_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """How many stats lines, and the peaks a report quotes."""
    def peak(key: str) -> float | None:
        values = [r[key] for r in rows if r.get(key) is not None]
        return max(values) if values else None
    return {"lines": len(rows), "peak_generation_tokens_per_s": peak("generation_tokens_per_s"),
            "peak_running": peak("running"), "peak_waiting": peak("waiting"),
            "peak_kv_cache_usage_pct": peak("kv_cache_usage_pct")}


def read_file_items(text: str) -> list[str | dict[str, Any]]:
    """A saved log: plain text, or the JSON of a FilterLogEvents answer (`aws logs
    filter-log-events` output, {"events": [...]}) or of a list of events."""
    stripped = text.lstrip()
    if stripped[:1] in "[{":
        try:
            data = json.loads(stripped)
        except json.JSONDecodeError:
            data = None
        events = data.get("events") if isinstance(data, dict) else data
        if isinstance(events, list) and all(isinstance(e, dict) for e in events):
            return [{"timestamp_ms": e.get("timestamp_ms", e.get("timestamp")),
                     "message": e.get("message", "")} for e in events]
    return text.splitlines()


def memory_block(facts: dict[str, Any] | None, missing_reason: str) -> dict[str, Any]:
    """summary.json `memory` entries from parsed facts, each with its source; with no
    facts, every entry None and `source` saying why."""
    keys = ("weights_gib", "kv_cache_tokens", "available_kv_gib", "peak_activation_gib",
            "load_s", "max_concurrency", "max_model_len", "torch_compile_s", "engine_init_s")
    if not facts or not facts.get("engine"):
        return {**{k: None for k in keys}, "source": None, "missing": missing_reason}
    return {**{k: facts.get(k) for k in keys}, "source": facts["source"],
            "engine": facts["engine"], "vllm_version": facts.get("vllm_version"),
            "missing": facts.get("missing") or {}}
