"""Repack a QAT q4_0 checkpoint into one build, tensor by tensor.

Memory stays bounded by a chunk of rows (CHUNK_BYTES of source data and the arrays made
from it), not by a tensor or a shard: headers and the plan come first, so every output
shard's header is written before any weight is read, and each chunk's packed words and
scales go straight to their offsets in the shard. The build is written into a sibling
folder `.<DST>.partial` and renamed to DST only when every tensor passed, so a refused or
failed build never looks finished; its repack-report.json stays in the partial folder.
"""

from __future__ import annotations

import json
import math
import resource
import shutil
import time
from pathlib import Path
from typing import Callable

import numpy as np
from safetensors import safe_open

from benchstack_repack import builds, dtypes, quant_config, report, tied_head
from benchstack_repack import safetensors_layout as layout
from benchstack_repack.int4_pack import VALUES_PER_WORD, pack_int4_rows
from benchstack_repack.qat_grid import GROUP_SIZE, GridStats, fit_int4
from benchstack_repack.sources import Source, SourceError, read_tensors

CHUNK_BYTES = 16 * 1024 ** 2
DEFAULT_MAX_SHARD_BYTES = 4 * 1024 ** 3
DEFAULT_MAX_OFF_GRID_SHARE = 1e-4


class RepackRefused(Exception):
    """The build must not be written; the message says which tensor and why."""


def packed_outputs(module: str, shape: tuple[int, ...]) -> list[layout.PlannedTensor]:
    """The three tensors compressed-tensors' PackedQuantizationCompressor.compress writes
    per module: weight_packed int32 (rows, cols / 8), weight_scale (rows, cols / 32) and
    weight_shape, the unpacked shape as int64 (torch.tensor(shape)'s dtype, and the dtype of
    vLLM's weight_shape parameter)."""
    rows, cols = shape
    return [layout.PlannedTensor(f"{module}.weight_packed", "I32", (rows, cols // VALUES_PER_WORD)),
            layout.PlannedTensor(f"{module}.weight_scale", "F16", (rows, cols // GROUP_SIZE)),
            layout.PlannedTensor(f"{module}.weight_shape", "I64", (2,))]


def _outputs(step: builds.Step, info: layout.TensorInfo) -> list[layout.PlannedTensor]:
    if step.action == "pack":
        return packed_outputs(step.module, info.shape)
    if step.action == "copy":
        return [layout.PlannedTensor(step.module, info.dtype, info.shape)]
    return []


def _chunks(rows: int, row_bytes: int, chunk_bytes: int):
    step = max(1, chunk_bytes // max(1, row_bytes))
    for first in range(0, rows, step):
        yield first, min(rows, first + step)


def _pack(source: Source, where, module: str, writers, chunk_bytes: int) -> GridStats:
    filename, data_start, info = where
    rows, cols = info.shape
    raw_dtype = dtypes.STORED[info.dtype]
    row_bytes = cols * raw_dtype.itemsize
    stats = GridStats()
    packed_name, scale_name = f"{module}.weight_packed", f"{module}.weight_scale"
    for first, last in _chunks(rows, row_bytes, chunk_bytes):
        raw = np.frombuffer(source.read(filename, data_start + info.begin + first * row_bytes,
                                        (last - first) * row_bytes), dtype=raw_dtype)
        raw = raw.reshape(last - first, cols)
        grid, relative_error = fit_int4(dtypes.to_f32(raw, info.dtype))
        stats.add(raw, info.dtype, grid, relative_error, first)
        words = pack_int4_rows(grid.q).astype("<i4")
        writers[packed_name].write(packed_name, first * words.shape[1] * 4, words)
        scales = grid.scale_f16.astype("<f2")
        writers[scale_name].write(scale_name, first * scales.shape[1] * 2, scales)
    shape_name = f"{module}.weight_shape"
    writers[shape_name].write(shape_name, 0, np.array(info.shape, dtype="<i8"))
    return stats


def _copy(source: Source, where, name: str, writers, chunk_bytes: int) -> None:
    filename, data_start, info = where
    for first in range(0, info.nbytes, chunk_bytes):
        length = min(chunk_bytes, info.nbytes - first)
        writers[name].write(name, first, source.read(filename, data_start + info.begin + first,
                                                     length))


def _entry(step: builds.Step, info: layout.TensorInfo, outputs) -> dict:
    return {"source": step.source, "module": step.module, "action": step.action,
            "reason": step.reason, "dtype": info.dtype, "shape": list(info.shape),
            "bytes_before": info.nbytes, "bytes_after": sum(t.nbytes for t in outputs)}


def _verify_shard(path: Path, planned: list[layout.PlannedTensor]) -> None:
    """Re-open a written shard with the safetensors library itself: its parser checks the
    header, the offsets and that the data has no holes."""
    with safe_open(str(path), framework="numpy") as f:
        found = set(f.keys())
    if found != {t.name for t in planned}:
        raise RepackRefused(f"{path.name}: safetensors reads tensors {sorted(found)[:3]}..., "
                            "not the planned ones")


def _write_steps(source: Source, steps, located, outputs, writers, entries: list[dict],
                 max_off_grid_share: float, chunk_bytes: int, log) -> str | None:
    """Every step's data into its shard; the refusal message when a tensor is off-grid
    past the threshold (the steps after it are not written)."""
    for step in steps:
        info = located[step.source][2]
        entry = _entry(step, info, outputs[id(step)])
        entries.append(entry)
        if step.action == "copy":
            _copy(source, located[step.source], step.module, writers, chunk_bytes)
        elif step.action == "pack":
            stats = _pack(source, located[step.source], step.module, writers, chunk_bytes)
            worst = stats.worst_error_of_group_max
            entry.update(groups=stats.groups, off_grid_groups=stats.off_grid_groups,
                         off_grid_share=stats.off_grid_share,
                         off_grid_examples=stats.off_grid_examples,
                         bit_identical_share=stats.bit_identical_share,
                         worst_error_of_group_max=worst if math.isfinite(worst) else None)
            log(report.packed_line(entry))
            if stats.off_grid_share > max_off_grid_share:
                return (f"{step.source}: {stats.off_grid_groups:,} of {stats.groups:,} groups "
                        f"are off the int4 grid ({stats.off_grid_share:.4%} > "
                        f"{max_off_grid_share:.4%}); not a QAT q4_0 tensor? Leave it at "
                        "16-bit with --keep-16bit or raise --max-off-grid-share")
    return None


def _prepare(destination: Path) -> Path:
    if destination.exists() and any(destination.iterdir()):
        raise RepackRefused(f"{destination}: exists and is not empty; choose a new folder")
    partial = destination.parent / f".{destination.name}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    return partial


def repack(source: Source, destination: Path, build: str, *,
           max_shard_bytes: int = DEFAULT_MAX_SHARD_BYTES,
           max_off_grid_share: float = DEFAULT_MAX_OFF_GRID_SHARE,
           keep_16bit: list[str] = (), chunk_bytes: int = CHUNK_BYTES,
           log: Callable[[str], None] = print) -> dict:
    """Write `build` of `source` to `destination`; the report, also saved as
    repack-report.json. Raises RepackRefused when a tensor has more off-grid groups than
    `max_off_grid_share` of its groups (the report is left in the partial folder)."""
    started = time.monotonic()
    config = source.json("config.json")
    if config is None:
        raise SourceError(f"{source.label}: no config.json")
    located = {info.name: (f, start, info) for f, start, info in read_tensors(source)}
    shapes = {n: (info.dtype, info.shape) for n, (_, _, info) in located.items()}
    head = tied_head.check(source, located, config)
    log(head.line())
    try:
        steps = builds.plan(build, shapes, lm_head_duplicate=head.droppable,
                            keep_16bit=keep_16bit)
    except ValueError as exc:
        raise RepackRefused(str(exc)) from None
    outputs = {id(s): _outputs(s, located[s.source][2]) for s in steps}
    shards = layout.plan_shards([t for s in steps for t in outputs[id(s)]], max_shard_bytes)
    names = layout.shard_names(len(shards))
    partial = _prepare(destination)
    writers = {}
    for shard, filename in zip(shards, names):
        writer = layout.ShardWriter(partial / filename, shard)
        writers.update({t.name: writer for t in shard})
    result = {"build": build, "source": source.label, "tied_head": head.as_dict(),
              "max_off_grid_share": max_off_grid_share, "tensors": []}
    try:
        refusal = _write_steps(source, steps, located, outputs, writers, result["tensors"],
                               max_off_grid_share, chunk_bytes, log)
    except BaseException:
        for writer in set(writers.values()):
            writer.abandon()
        raise
    for writer in set(writers.values()):
        if refusal:
            writer.abandon()
        else:
            writer.close()
    result.update(elapsed_s=round(time.monotonic() - started, 3),
                  peak_rss_bytes=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
    if refusal is not None:
        result["refused"] = refusal
        _write_json(partial / report.REPORT_FILE, result)
        raise RepackRefused(f"{refusal}; report in {partial / report.REPORT_FILE}")
    for shard, filename in zip(shards, names):
        _verify_shard(partial / filename, shard)
    _write_json(partial / layout.INDEX_FILE, layout.index_json(shards, names))
    _write_json(partial / "config.json", quant_config.build_config(config, steps, shapes))
    result["copied_files"] = [f for f in source.sidecars() if source.copy(f, partial)]
    result["shards"] = names
    log(report.totals_line(result["tensors"]))
    _write_json(partial / report.REPORT_FILE, result)
    if destination.exists():
        destination.rmdir()  # empty, as _prepare checked
    partial.rename(destination)
    return result


def _write_json(path: Path, data: dict) -> None:
    path.write_text(json.dumps(data, indent=2, allow_nan=False) + "\n")
