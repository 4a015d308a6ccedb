"""Is the checkpoint's lm_head.weight a byte-for-byte copy of embed_tokens?

Google's Gemma 4 E2B and E4B files set tie_word_embeddings true yet ship a separate
lm_head.weight (262,144 x 1,536 and x 2,560 bf16: 0.75 and 1.25 GiB) that vLLM loads. The
check needs no download: the two headers give dtype and shape, then a few rows of each
table are read by byte range (Range requests on the Hub) and compared. Rows are spread
over the table, first and last included; a duplicate is equal dtype and shape and every
sampled row identical. A duplicate is dropped only where the config ties the head.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from benchstack_repack import builds
from benchstack_repack.dtypes import ITEM_BYTES
from benchstack_repack.safetensors_layout import TensorInfo
from benchstack_repack.sources import Source

SAMPLE_ROWS = 7
Located = dict[str, tuple[str, int, TensorInfo]]  # name -> (shard file, data start, info)


@dataclass(frozen=True)
class TiedHead:
    lm_head: str | None
    embed_tokens: str | None
    tie_word_embeddings: bool | None
    shape: list[int] | None = None
    dtype: str | None = None
    lm_head_bytes: int = 0
    rows_sampled: int = 0
    rows_identical: int = 0
    duplicate: bool = False

    @property
    def droppable(self) -> bool:
        """A duplicate in a config that ties the head (unset ties, as in transformers'
        PretrainedConfig): the engine rebuilds lm_head from embed_tokens."""
        return self.duplicate and self.tie_word_embeddings is not False

    def line(self) -> str:
        if self.lm_head is None:
            return "lm_head: no separate tensor (tied to embed_tokens)"
        if not self.rows_sampled:
            return (f"{self.lm_head}: not compared with embed_tokens (dtype or shape "
                    "differ, or no embed_tokens)")
        verdict = ("a duplicate of embed_tokens, dropped unless the build packs it"
                   if self.droppable else "a duplicate, but tie_word_embeddings is false; kept"
                   if self.duplicate else "differs from embed_tokens; kept")
        return (f"{self.lm_head}: {' x '.join(f'{d:,}' for d in self.shape)} "
                f"{self.dtype.lower()}, {self.lm_head_bytes:,} bytes; rows byte-identical to "
                f"embed_tokens {self.rows_identical} of {self.rows_sampled}: {verdict}")

    def as_dict(self) -> dict:
        return asdict(self)


def _find(located: Located, leaf: str) -> str | None:
    names = [n for n in located if n.endswith(".weight") and builds.leaf(n) == leaf
             and not builds.is_tower(n)]
    return names[0] if names else None


def sample_rows(rows: int, count: int = SAMPLE_ROWS) -> list[int]:
    return sorted({int(r) for r in np.linspace(0, rows - 1, num=min(count, rows))})


def _row(source: Source, where: tuple[str, int, TensorInfo], row: int) -> bytes:
    filename, data_start, info = where
    row_bytes = ITEM_BYTES[info.dtype] * int(np.prod(info.shape[1:]))
    return source.read(filename, data_start + info.begin + row * row_bytes, row_bytes)


def check(source: Source, located: Located, config: dict) -> TiedHead:
    tie = config.get("tie_word_embeddings")
    if tie is None and isinstance(config.get("text_config"), dict):
        tie = config["text_config"].get("tie_word_embeddings")
    head, embed = _find(located, builds.LM_HEAD), _find(located, "embed_tokens")
    result = TiedHead(head, embed, tie)
    if head is None or embed is None:
        return result
    h, e = located[head][2], located[embed][2]
    if h.dtype != e.dtype or h.shape != e.shape or len(h.shape) != 2:
        return result
    rows = sample_rows(h.shape[0])
    identical = sum(_row(source, located[head], r) == _row(source, located[embed], r)
                    for r in rows)
    return TiedHead(head, embed, tie, list(h.shape), h.dtype, h.nbytes, len(rows), identical,
                    identical == len(rows))
