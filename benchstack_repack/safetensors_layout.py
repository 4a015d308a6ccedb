"""The safetensors file layout, read and written without holding a tensor in memory.

From the format's specification (huggingface/safetensors, README "Format"): 8 bytes, an
unsigned little-endian 64-bit integer N; N bytes of UTF-8 JSON mapping each tensor name to
{"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to the first byte after
the header) plus an optional "__metadata__" of string to string; the header may be padded
with spaces; then the data, little-endian, row-major, with no holes between tensors.

Because every output tensor's dtype and shape are known before any weight is read, each
shard's header is written first and the data placed at its offsets as it is produced, so a
shard never has to be assembled in memory.
"""

from __future__ import annotations

import json
import math
import os
import struct
from dataclasses import dataclass
from pathlib import Path

from benchstack_repack.dtypes import ITEM_BYTES

HEADER_LENGTH_BYTES = 8
MAX_HEADER_BYTES = 100_000_000  # the format's own limit on the JSON header
INDEX_FILE = "model.safetensors.index.json"
SINGLE_FILE = "model.safetensors"


@dataclass(frozen=True)
class TensorInfo:
    name: str
    dtype: str
    shape: tuple[int, ...]
    begin: int  # offset of the data from the start of the data section
    end: int

    @property
    def nbytes(self) -> int:
        return self.end - self.begin


def header_length(prefix: bytes) -> int:
    """N from the first 8 bytes of a shard; ValueError when it cannot be a header."""
    if len(prefix) != HEADER_LENGTH_BYTES:
        raise ValueError("shorter than a safetensors header")
    (length,) = struct.unpack("<Q", prefix)
    if not 2 <= length <= MAX_HEADER_BYTES:
        raise ValueError(f"declares a {length}-byte header; not a safetensors file")
    return length


def parse_header(body: bytes) -> list[TensorInfo]:
    """Tensors of one shard, in data order."""
    header = json.loads(body)
    tensors = [TensorInfo(name, info["dtype"], tuple(info["shape"]), *info["data_offsets"])
               for name, info in header.items() if name != "__metadata__"]
    return sorted(tensors, key=lambda t: t.begin)


@dataclass(frozen=True)
class PlannedTensor:
    name: str
    dtype: str
    shape: tuple[int, ...]

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * ITEM_BYTES[self.dtype]


def plan_shards(tensors: list[PlannedTensor], max_shard_bytes: int) -> list[list[PlannedTensor]]:
    """Tensors in order, a new shard whenever the next would push this one past the limit
    (a tensor larger than the limit gets a shard of its own)."""
    shards: list[list[PlannedTensor]] = [[]]
    size = 0
    for tensor in tensors:
        if shards[-1] and size + tensor.nbytes > max_shard_bytes:
            shards.append([])
            size = 0
        shards[-1].append(tensor)
        size += tensor.nbytes
    return [s for s in shards if s]


def shard_names(count: int) -> list[str]:
    if count == 1:
        return [SINGLE_FILE]
    return [f"model-{i:05d}-of-{count:05d}.safetensors" for i in range(1, count + 1)]


def encode_header(tensors: list[PlannedTensor]) -> tuple[bytes, dict[str, int]]:
    """The 8-byte length plus the space-padded JSON header (data then starts 8-aligned),
    and each tensor's offset in the data section."""
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offsets, position = {}, 0
    for t in tensors:
        header[t.name] = {"dtype": t.dtype, "shape": list(t.shape),
                          "data_offsets": [position, position + t.nbytes]}
        offsets[t.name] = position
        position += t.nbytes
    body = json.dumps(header, separators=(",", ":")).encode()
    body += b" " * (-len(body) % 8)
    return struct.pack("<Q", len(body)) + body, offsets


class ShardWriter:
    """One output shard: header first, then data written at each tensor's offset."""

    def __init__(self, path: Path, tensors: list[PlannedTensor]):
        prefix, offsets = encode_header(tensors)
        self.path = path
        self._data_start = len(prefix)
        self._offsets = offsets
        self._sizes = {t.name: t.nbytes for t in tensors}
        self._written = dict.fromkeys(offsets, 0)
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        os.pwrite(self._fd, prefix, 0)
        os.ftruncate(self._fd, self._data_start + sum(self._sizes.values()))

    def write(self, name: str, offset_in_tensor: int, data) -> None:
        """`data`: bytes or a C-contiguous array, written as its raw bytes."""
        view = memoryview(data).cast("B")
        length = len(view)
        if offset_in_tensor + length > self._sizes[name]:
            raise ValueError(f"{name}: write past the tensor's end")
        position = self._data_start + self._offsets[name] + offset_in_tensor
        while view:
            done = os.pwrite(self._fd, view, position)
            view, position = view[done:], position + done
        self._written[name] += length

    def abandon(self) -> None:
        """Close without the completeness check: the build failed or was refused."""
        os.close(self._fd)

    def close(self) -> None:
        os.close(self._fd)
        short = [n for n, size in self._sizes.items() if self._written[n] != size]
        if short:
            raise ValueError(f"{self.path.name}: tensors not fully written: {short[:3]}")


def index_json(shards: list[list[PlannedTensor]], names: list[str]) -> dict:
    """model.safetensors.index.json: total data bytes and tensor -> shard file."""
    return {"metadata": {"total_size": sum(t.nbytes for s in shards for t in s)},
            "weight_map": {t.name: file for s, file in zip(shards, names) for t in s}}
