"""Accelerator samples the EC2 boot script takes at 1 Hz, and their summary per window.

nvidia-smi (the boot script's exact query, nvidia-smi --help-query-gpu):
    nvidia-smi --query-gpu=timestamp,utilization.gpu,utilization.memory,memory.used,
               memory.total,clocks.mem,power.draw --format=csv,noheader,nounits -l 1
one CSV row per GPU per second: "2026/10/12 00:20:01.123, 87, 64, 20480, 23034, 6251,
71.52" (timestamp "%Y/%m/%d %H:%M:%S.%f"; % for utilization, MiB, MHz, W). A field the
GPU cannot report reads "[N/A]" (or "[Not Supported]"): kept as None.
utilization.memory is the share of time the memory controller was busy, not bandwidth
used: the report quotes it beside the roofline share as a bound, not as GB/s.

neuron-monitor (AWS Neuron docs, "Neuron Monitor User Guide"): one JSON report per
period; the boot script runs it with period 1s and prefixes each line with its epoch
time: {"t": 1760228400.1, "sample": <report>}. Per report: neuroncore_utilization of each
core in neuron_runtime_data[].report.neuroncore_counters.neuroncores_in_use, device
memory in report.memory_used.neuron_runtime_used_bytes.neuron_device.
"""

from __future__ import annotations

import datetime as dt
import json
import statistics
from typing import Any, Iterable

NVIDIA_FIELDS = ("timestamp", "utilization_gpu_pct", "utilization_memory_pct",
                 "memory_used_mib", "memory_total_mib", "clocks_mem_mhz", "power_draw_w")
NVIDIA_QUERY = ("timestamp,utilization.gpu,utilization.memory,memory.used,memory.total,"
                "clocks.mem,power.draw")


def _number(text: str) -> float | None:
    text = text.strip()
    try:
        return float(text)
    except ValueError:
        return None  # "[N/A]", "[Not Supported]"


def parse_nvidia_smi(text: str) -> list[dict[str, Any]]:
    """Rows of the CSV above; a row with the wrong number of fields is skipped."""
    rows = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != len(NVIDIA_FIELDS):
            continue
        try:
            stamp = dt.datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f")
        except ValueError:
            continue
        row: dict[str, Any] = {"t": stamp.replace(tzinfo=dt.timezone.utc).timestamp()}
        row.update({k: _number(v) for k, v in zip(NVIDIA_FIELDS[1:], parts[1:])})
        rows.append(row)
    return rows


def parse_neuron_monitor(text: str) -> list[dict[str, Any]]:
    """One row per timed report: mean NeuronCore utilization over the cores in use, and
    device memory used (bytes) summed over the runtimes."""
    rows = []
    for line in text.splitlines():
        try:
            item = json.loads(line)
            sample = item["sample"]
        except (ValueError, KeyError, TypeError):
            continue
        utils, device_bytes = [], 0
        for runtime in sample.get("neuron_runtime_data") or []:
            report = runtime.get("report") or {}
            cores = (report.get("neuroncore_counters") or {}).get("neuroncores_in_use") or {}
            utils += [c["neuroncore_utilization"] for c in cores.values()
                      if isinstance(c, dict) and "neuroncore_utilization" in c]
            used = (report.get("memory_used") or {}).get("neuron_runtime_used_bytes") or {}
            device_bytes += used.get("neuron_device", 0) if isinstance(used, dict) else 0
        rows.append({"t": float(item["t"]),
                     "utilization_pct": statistics.fmean(utils) if utils else None,
                     "device_memory_used_bytes": device_bytes})
    return rows


def _mean(values: Iterable[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return statistics.fmean(kept) if kept else None


def _peak(values: Iterable[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return max(kept) if kept else None


def window_summary(rows: list[dict[str, Any]], start_s: float, end_s: float,
                   kind: str) -> dict[str, Any]:
    """Means and peaks of the samples taken in [start_s, end_s] (epoch seconds)."""
    inside = [r for r in rows if start_s <= r["t"] <= end_s]
    out: dict[str, Any] = {"samples": len(inside)}
    if kind == "nvidia-smi":
        for key in ("utilization_gpu_pct", "utilization_memory_pct", "power_draw_w",
                    "clocks_mem_mhz"):
            out[f"{key}_mean"] = _mean(r[key] for r in inside)
        out["memory_used_mib_peak"] = _peak(r["memory_used_mib"] for r in inside)
    else:
        out["utilization_pct_mean"] = _mean(r["utilization_pct"] for r in inside)
        out["device_memory_used_bytes_peak"] = _peak(r["device_memory_used_bytes"]
                                                     for r in inside)
    return out


def parse_samples(name: str, text: str) -> tuple[str, list[dict[str, Any]]]:
    """(kind, rows) for a file the boot script shipped, by its name."""
    if name.endswith("neuron-monitor.jsonl"):
        return "neuron-monitor", parse_neuron_monitor(text)
    return "nvidia-smi", parse_nvidia_smi(text)
