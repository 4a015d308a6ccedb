"""The local host's memory bandwidth, measured once per run before the engine starts, so a
local run gets a roofline like the cloud rows (whose bandwidth is a vendor figure in
runners/hardware.py; a laptop's is not catalogued anywhere).

A copy benchmark in the standard library: a memoryview slice assignment is one memcpy of a
buffer far larger than the CPU caches. Counted like STREAM's Copy (bytes read + bytes
written), best of a few repeats (the least disturbed by the other tenants of the host).
It is one thread, like llama.cpp's decode here (llama-cpp-python's server decodes on
cpu_count // 2 threads: 1 on 2 cores), so it is the bandwidth that decode can draw on.
"""

from __future__ import annotations

import os
import time
from typing import Any

COPY_BYTES = 128 * 1024**2  # far above any L3 cache; 256 MiB of RAM for both buffers
COPY_REPEATS = 5


def copy_gb_per_s(bytes_copied: int, seconds: float) -> float:
    """STREAM Copy convention: every byte is read once and written once."""
    if seconds <= 0:
        raise ValueError("seconds must be positive")
    return 2 * bytes_copied / seconds / 1e9


def best_copy_seconds(size_bytes: int, repeats: int) -> float:
    source, target = memoryview(bytearray(b"\x5a" * size_bytes)), memoryview(bytearray(size_bytes))
    target[:] = source  # untimed: fault every page in first
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        target[:] = source
        best = min(best, time.perf_counter() - started)
    return best


def measure(size_bytes: int = COPY_BYTES, repeats: int = COPY_REPEATS) -> dict[str, Any]:
    """The host block of a local placement: bandwidth, how it was measured, the CPUs."""
    seconds = best_copy_seconds(size_bytes, repeats)
    return {"memory_bandwidth_gb_per_s": round(copy_gb_per_s(size_bytes, seconds), 2),
            "bandwidth_method": f"stdlib memcpy of {size_bytes / 1024**2:g} MiB, best of "
                                f"{repeats}, bytes read + written (STREAM Copy), one thread",
            "cpu_count": os.cpu_count()}
