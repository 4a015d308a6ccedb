"""The report's "Local engine" section: what served a local run, so its figures read right.

llama-cpp-python's server runs one request at a time (one lock around the model in
llama_cpp/server/app.py), so its throughput stays flat or falls with concurrency: that is
the engine, not the harness. The context lines separate the model's trained context
(n_ctx_train, from llama.cpp's startup lines) from the window the server was started with
(n_ctx, which is also the size of its one-sequence KV cache). The roofline uses the host
bandwidth measured at provision (runners/providers/local_host.py), as the cloud rows use
their accelerator's.
"""

from __future__ import annotations

from typing import Any

from runners import hardware
from runners.results.workload_section import level_name

HOST_KEYS = ("memory_bandwidth_gb_per_s", "bandwidth_method", "cpu_count")


def host(placement: dict[str, Any]) -> dict[str, Any] | None:
    """summary.json's `host` block: the measured host of a local run (None elsewhere)."""
    measured = placement.get("host")
    return {k: measured.get(k) for k in HOST_KEYS} if measured else None


def roofline(summary: dict[str, Any]) -> dict[str, float] | None:
    """Ceiling tokens/s (bandwidth over weight bytes) and the share decode reached."""
    bandwidth = (summary.get("host") or {}).get("memory_bandwidth_gb_per_s")
    weights = (summary.get("memory") or {}).get("weights_gib")
    rate = (summary.get("decode") or {}).get("tokens_per_s")
    if not (bandwidth and weights and rate):
        return None
    ceiling = hardware.decode_ceiling_tokens_per_s(bandwidth, weights * hardware.GIB)
    return {"ceiling_tokens_per_s": ceiling, "share": hardware.roofline_share(rate, ceiling)}


def _placement(files: dict[str, Any]) -> dict[str, Any]:
    """The ready placement carries the engine's startup facts; provision's lacks them."""
    ready = (files.get("await_ready") or {}).get("placement")
    return ready or (files.get("manifest") or {}).get("placement") or {}


def _load_line(summary: dict[str, Any]) -> str | None:
    levels = [lvl for lvl in summary.get("load") or [] if lvl.get("tokens_per_s")]
    if len(levels) < 2:
        return None
    first, last = levels[0], levels[-1]
    return (f"Throughput went from {first['tokens_per_s']:.1f} tokens/s at "
            f"{level_name(first)} to {last['tokens_per_s']:.1f} at {level_name(last)} "
            f"({last['tokens_per_s'] / first['tokens_per_s']:.2f}x): one request at a time, "
            "so past the engine's own rate the requests queue and latency grows instead.")


def lines(summary: dict[str, Any], files: dict[str, Any]) -> list[str]:
    """Markdown lines of the section; none for a run that was not local."""
    if summary.get("backend") != "local":
        return []
    placement = _placement(files)
    settings = placement.get("engine_settings") or {}
    facts = placement.get("engine_facts") or {}
    measured = summary.get("host") or {}
    if not settings:
        return []
    out = ["## Local engine", "",
           f"- Engine: llama-cpp-python {settings.get('version')} server (llama.cpp on CPU), "
           f"chat format `{settings.get('chat_format')}`, {settings.get('n_threads')} decode "
           f"thread(s) and {settings.get('n_threads_batch')} for prompt processing on "
           f"{measured.get('cpu_count') or '?'} CPU(s).",
           "- It serves one request at a time: concurrent requests wait for the one in "
           "progress, none are batched. Throughput flat or falling with concurrency is the "
           "engine, not the harness."]
    out.append("- Prompt cache: the engine keeps the previous request's KV cache and reuses "
               "its longest matching prefix (`Llama.generate: N prefix-match hit` in its log), "
               "so a prompt sent again evaluates about one new token: TTFT of the repeated "
               "forced prompt measures almost no prefill.")
    load_line = _load_line(summary)
    if load_line:
        out.append(f"- {load_line}")
    trained, window = facts.get("n_ctx_train"), facts.get("n_ctx") or settings.get("n_ctx")
    kv = (f"; its KV cache holds {facts['kv_cache_cells']} tokens of one sequence "
          f"({facts['kv_cache_mib']:g} MiB)" if facts.get("kv_cache_cells")
          and facts.get("kv_cache_mib") is not None else "")
    out.append(f"- Context: the model was trained for {trained or 'an unreported number of'} "
               f"tokens (n_ctx_train); this server was started with a {window}-token window "
               f"(n_ctx){kv}.")
    roof = roofline(summary)
    if roof:
        out.append(f"- Roofline: host memory bandwidth {measured['memory_bandwidth_gb_per_s']:.1f}"
                   f" GB/s ({measured.get('bandwidth_method')}) over "
                   f"{summary['memory']['weights_gib']:.3f} GiB of weights = "
                   f"{roof['ceiling_tokens_per_s']:.0f} tokens/s ceiling; decode reached "
                   f"{summary['decode']['tokens_per_s']:.1f} tokens/s, {roof['share']:.0%} of it.")
    if settings.get("tools"):
        out.append("- Tool calls: the chat format turns OpenAI `tools` into a grammar-"
                   "constrained call (tool choice \"auto\"). Its template (llama_chat_format.py) "
                   "prints no `tool` messages, so the model never sees the tool's count and "
                   "tends to call again until the phase's turn limit: the filter grade is the "
                   "one that measures the model.")
    return out + [""]
