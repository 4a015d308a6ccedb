"""Tiny synthetic checkpoints shaped like Gemma 4 E2B's QAT files, and an independent
reader of what the repack writes.

Nothing here reuses the tool's code: bf16 is written through safetensors' numpy API as
uint16 bits with the header's dtype rewritten, and the packed int4 words are decoded by
splitting little-endian bytes into nibbles (the tool packs by shifting into words).
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
from safetensors import safe_open
from safetensors.numpy import save

EMBED = "model.language_model.embed_tokens.weight"
PLE = "model.language_model.embed_tokens_per_layer.weight"
Q_PROJ = "model.language_model.layers.0.self_attn.q_proj.weight"
DOWN_PROJ = "model.language_model.layers.0.mlp.down_proj.weight"
PLE_PROJ = "model.language_model.per_layer_model_projection.weight"
ODD_PROJ = "model.language_model.layers.0.self_attn.odd_proj.weight"  # 48 inputs: not /32
NORM = "model.language_model.layers.0.input_layernorm.weight"
VISION_FC = "model.vision_tower.encoder.layers.0.mlp.fc1.weight"
VISION_PATCH = "model.embed_vision.embedding_projection.weight"
AUDIO_CONV = "model.audio_tower.subsample.conv.weight"
LM_HEAD = "lm_head.weight"
VOCAB, HIDDEN, PLE_DIM = 96, 64, 160


def to_bf16_bits(values: np.ndarray) -> np.ndarray:
    """float32 -> bf16 bits, round half to even (written out here, not imported)."""
    u = values.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16_bits(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


def qat_bits(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
    """bf16 bits of a q4_0-style QAT tensor: per group of 32, d x q with q in [-8, 7],
    d = extreme / -8 (so each group holds one q = -8), d of either sign, d drawn in float32
    (not a bf16 value, so rounding to bf16 makes some values differ from d x q)."""
    groups = cols // 32
    q = rng.integers(-8, 8, size=(rows, groups, 32))
    q[:, :, 0] = -8
    q = rng.permuted(q, axis=2)
    d = (rng.uniform(0.002, 0.05, size=(rows, groups, 1))
         * rng.choice([-1.0, 1.0], size=(rows, groups, 1))).astype(np.float32)
    return to_bf16_bits((q * d).reshape(rows, cols))


def random_bits(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
    return to_bf16_bits(rng.normal(0, 0.02, size=(rows, cols)).astype(np.float32))


def write_safetensors_bf16(path: Path, tensors: dict[str, np.ndarray], bf16: set[str]) -> None:
    """safetensors.numpy.save with the `bf16` names' uint16 arrays relabelled BF16."""
    blob = save(tensors)
    (length,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + length])
    for name in bf16:
        header[name]["dtype"] = "BF16"
    body = json.dumps(header).encode()
    body += b" " * (-len(body) % 8)
    path.write_bytes(struct.pack("<Q", len(body)) + body + blob[8 + length:])


def gemma_like(folder: Path, *, seed: int = 0, head: str = "duplicate",
               off_grid: tuple[str, ...] = (), shards: int = 2,
               tie: bool | None = None) -> dict[str, np.ndarray]:
    """A checkpoint folder with towers, 16-bit norms, QAT Linears and tables.

    head: "duplicate" (lm_head.weight a byte copy of embed_tokens, tie true, as Google's
    E2B ships), "tied" (no lm_head tensor), or "untied" (a different lm_head, tie false).
    off_grid: names whose values are random instead of on the QAT grid.
    tie: tie_word_embeddings, when not the one `head` implies.
    Returns the tensors as written (bf16 as uint16 bits).
    """
    rng = np.random.default_rng(seed)
    shapes = {EMBED: (VOCAB, HIDDEN), PLE: (VOCAB, PLE_DIM), Q_PROJ: (HIDDEN, HIDDEN),
              DOWN_PROJ: (HIDDEN, 128), PLE_PROJ: (PLE_DIM, HIDDEN), ODD_PROJ: (16, 48),
              VISION_FC: (32, HIDDEN), VISION_PATCH: (HIDDEN, 96)}
    tensors = {n: (random_bits if n in off_grid or s[1] % 32 else qat_bits)(rng, *s)
               for n, s in shapes.items()}
    tensors[NORM] = to_bf16_bits(rng.normal(1, 0.1, size=HIDDEN).astype(np.float32))
    tensors[AUDIO_CONV] = to_bf16_bits(rng.normal(0, 0.1, size=(8, 1, 3)).astype(np.float32))
    if head == "duplicate":
        tensors[LM_HEAD] = tensors[EMBED].copy()
    elif head == "untied":
        tensors[LM_HEAD] = qat_bits(rng, VOCAB, HIDDEN)
    folder.mkdir(parents=True, exist_ok=True)
    names = list(tensors)
    files = [names[i::shards] for i in range(shards)]
    weight_map = {}
    for i, part in enumerate(files, 1):
        filename = f"model-{i:05d}-of-{shards:05d}.safetensors"
        write_safetensors_bf16(folder / filename, {n: tensors[n] for n in part}, set(part))
        weight_map.update(dict.fromkeys(part, filename))
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {}, "weight_map": weight_map}))
    tie = head != "untied" if tie is None else tie
    (folder / "config.json").write_text(json.dumps({
        "architectures": ["Gemma4ForConditionalGeneration"], "model_type": "gemma4",
        "tie_word_embeddings": tie,
        "text_config": {"hidden_size": HIDDEN, "vocab_size": VOCAB, "tie_word_embeddings": tie},
        "vision_config": {"hidden_size": 32}, "audio_config": {"hidden_size": 8}}))
    (folder / "tokenizer.json").write_text('{"model": "synthetic"}')
    return tensors


# ---------------------------------------------------------------- reading the output


NUMPY = {"BF16": "<u2", "F16": "<f2", "F32": "<f4", "I32": "<i4", "I64": "<i8"}


def read_shard(path: Path) -> dict[str, np.ndarray]:
    """A shard's tensors by the spec's layout (BF16 as uint16 bits, which numpy lacks);
    safetensors itself must agree on the names."""
    blob = path.read_bytes()
    (length,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + length])
    header.pop("__metadata__", None)
    data = memoryview(blob)[8 + length:]
    spans = sorted(info["data_offsets"] for info in header.values())
    assert spans[0][0] == 0 and spans[-1][1] == len(data)
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:])), "holes between tensors"
    with safe_open(str(path), framework="numpy") as f:
        assert set(f.keys()) == set(header)
    return {name: np.frombuffer(data[slice(*info["data_offsets"])], dtype=NUMPY[info["dtype"]])
            .reshape(info["shape"]) for name, info in header.items()}


def load_build(folder: Path) -> dict[str, np.ndarray]:
    """Every tensor of a written build, through its index."""
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    out = {}
    for filename in sorted(set(index["weight_map"].values())):
        shard = read_shard(folder / filename)
        assert all(index["weight_map"][n] == filename for n in shard)
        out.update(shard)
    assert set(out) == set(index["weight_map"])
    return out


def decode_int4(packed: np.ndarray, scale: np.ndarray, shape: np.ndarray) -> np.ndarray:
    """float32 weights from weight_packed / weight_scale / weight_shape, decoded by bytes:
    little-endian word j's byte k holds elements 8j+2k (low nibble) and 8j+2k+1 (high)."""
    rows, cols = (int(v) for v in shape)
    as_bytes = np.ascontiguousarray(packed.astype("<i4")).view(np.uint8).reshape(rows, -1)
    nibbles = np.empty((rows, as_bytes.shape[1] * 2), dtype=np.int16)
    nibbles[:, 0::2] = as_bytes & 0x0F
    nibbles[:, 1::2] = as_bytes >> 4
    q = nibbles[:, :cols] - 8
    return q * np.repeat(scale.astype(np.float32), 32, axis=1)
