#!/usr/bin/env python3
"""Time and peak memory of the repack on one realistic tensor.

Writes a one-tensor checkpoint in a temporary folder: a bf16 table of ROWS x COLS on the
q4_0 QAT grid, named as Gemma 4's per-layer embedding table so that the ple4 build packs
it (default 262,144 x 1,536: E2B's embed_tokens / lm_head shape, 0.75 GiB). Then runs
`python -m benchstack_repack SRC DST --build ple4` in a child process and prints its
wall time, throughput and peak resident memory, beside the peak of a child that only
imports the tool. Linux carries a process's peak RSS across fork and exec, so the input
is written by a child of its own and the measured children start from a parent that
never held the data.

    .venv/bin/python benchmarks/repack_tensor.py [--rows 262144] [--cols 1536]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchstack_repack import dtypes  # noqa: E402
from benchstack_repack import safetensors_layout as layout  # noqa: E402

NAME = "model.language_model.embed_tokens_per_layer.weight"
GIB, MIB = 1024 ** 3, 1024 ** 2
ROWS_PER_WRITE = 8192


def write_qat_table(path: Path, rows: int, cols: int) -> None:
    """A bf16 tensor on the q4_0 grid (d x q, q in [-8, 7], one q = -8 per group), written a
    block of rows at a time so the benchmark itself stays small."""
    rng = np.random.default_rng(0)
    planned = [layout.PlannedTensor(NAME, "BF16", (rows, cols))]
    writer = layout.ShardWriter(path, planned)
    for first in range(0, rows, ROWS_PER_WRITE):
        n = min(ROWS_PER_WRITE, rows - first)
        q = rng.integers(-8, 8, size=(n, cols // 32, 32)).astype(np.float32)
        q[:, :, 0] = -8
        d = rng.uniform(0.002, 0.05, size=(n, cols // 32, 1)).astype(np.float32)
        bits = dtypes.f32_to_bf16_bits((q * d).reshape(n, cols))
        writer.write(NAME, first * cols * 2, bits)
    writer.close()


def child_peak_rss(args: list[str]) -> tuple[float, int, str]:
    """Wall seconds, peak RSS bytes and stdout of one child process (os.wait4 gives that
    child's own rusage, where RUSAGE_CHILDREN would be the largest of all children)."""
    started = time.monotonic()
    child = subprocess.Popen([sys.executable, *args], cwd=ROOT, stdout=subprocess.PIPE,
                             text=True)
    out = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.monotonic() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise SystemExit(f"{args}: exit {child.returncode}")
    return elapsed, usage.ru_maxrss * 1024, out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=262_144)
    p.add_argument("--cols", type=int, default=1_536)
    p.add_argument("--write-only", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.write_only:
        write_qat_table(args.write_only, args.rows, args.cols)
        return
    with tempfile.TemporaryDirectory(prefix="repack-bench-") as tmp:
        src, dst = Path(tmp) / "src", Path(tmp) / "dst"
        src.mkdir()
        (src / "config.json").write_text(json.dumps({"tie_word_embeddings": True}))
        subprocess.run([sys.executable, __file__, "--rows", str(args.rows), "--cols",
                        str(args.cols), "--write-only", str(src / layout.SINGLE_FILE)],
                       check=True)
        _, baseline, _ = child_peak_rss(["-c", "import benchstack_repack.repack"])
        elapsed, peak, out = child_peak_rss(
            ["-m", "benchstack_repack", str(src), str(dst), "--build", "ple4"])
        report = json.loads((dst / "repack-report.json").read_text())
    source_bytes = args.rows * args.cols * 2
    print(next(line for line in out.splitlines() if line.startswith(NAME)))
    print(f"tensor {args.rows:,} x {args.cols:,} bf16: {source_bytes / GIB:.3f} GiB")
    print(f"wall time {elapsed:.1f} s (child process, start-up included); the tool's own "
          f"timer {report['elapsed_s']:.1f} s; {source_bytes / MIB / report['elapsed_s']:.0f} "
          f"MiB/s of bf16 input")
    print(f"peak RSS {peak / MIB:.0f} MiB (importing the tool alone: {baseline / MIB:.0f} "
          f"MiB); the tensor is {source_bytes / MIB:.0f} MiB")


if __name__ == "__main__":
    main()
