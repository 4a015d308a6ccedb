"""nvidia-smi CSV rows and timed neuron-monitor reports, in the formats the boot script
writes them."""

from __future__ import annotations

import json

from runners.telemetry import device

NVIDIA = """2026/10/12 00:20:01.123, 87, 64, 20480, 23034, 6251, 71.52
2026/10/12 00:20:02.124, 91, 66, 20480, 23034, 6251, 72.10
2026/10/12 00:20:03.125, [N/A], 0, 20480, 23034, 6251, [N/A]
garbage line
"""


def test_nvidia_smi_rows_and_window():
    rows = device.parse_nvidia_smi(NVIDIA)
    assert len(rows) == 3
    assert rows[0]["utilization_gpu_pct"] == 87 and rows[0]["power_draw_w"] == 71.52
    assert rows[2]["utilization_gpu_pct"] is None  # [N/A] kept as None, not 0
    summary = device.window_summary(rows, rows[0]["t"], rows[1]["t"], "nvidia-smi")
    assert summary["samples"] == 2 and summary["utilization_gpu_pct_mean"] == 89
    assert summary["memory_used_mib_peak"] == 20480


def test_boot_script_query_matches_the_parser():
    from pathlib import Path
    script = (Path(device.__file__).parents[1] / "providers/ec2/user_data.sh").read_text()
    assert f"--query-gpu={device.NVIDIA_QUERY} " in script.replace("\\\n    ", "")
    assert len(device.NVIDIA_QUERY.split(",")) == len(device.NVIDIA_FIELDS)


def test_neuron_monitor_reports():
    report = {"neuron_runtime_data": [{"pid": 2199, "report": {
        "neuroncore_counters": {"period": 1.0006, "neuroncores_in_use": {
            "0": {"neuroncore_utilization": 89.4}, "1": {"neuroncore_utilization": 10.6}}},
        "memory_used": {"neuron_runtime_used_bytes": {"host": 1166249984,
                                                      "neuron_device": 141649980}}}}],
        "system_data": {}}
    text = json.dumps({"t": 1760228401.5, "sample": report}) + "\nnot json\n"
    (row,) = device.parse_neuron_monitor(text)
    assert row == {"t": 1760228401.5, "utilization_pct": 50.0,
                   "device_memory_used_bytes": 141649980}
