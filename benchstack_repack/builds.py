"""What each build does with each tensor: pack it to int4, copy it as it is, or drop it.

Every build is text-only: the vision and audio towers (any tensor with a name component
containing "vision" or "audio", e.g. model.vision_tower.*, model.embed_audio.*) are
dropped. They differ in the embedding tables:

    text-only  Linear layers int4; embed_tokens, the per-layer table and lm_head 16-bit
    ple4       as text-only, plus the per-layer embedding table (embed_tokens_per_layer) int4
    emb4       as ple4, plus embed_tokens int4 and lm_head as its own int4 table

text-only and ple4 drop a separate lm_head.weight that duplicates embed_tokens (the model
ties them). emb4 writes lm_head untied, as its own packed table, because vLLM ties the
output layer by copying the embedding's 16-bit `weight`, which a packed table does not
have; when the source has no lm_head tensor, emb4 packs embed_tokens a second time under
the name lm_head.

A Linear is a 2-D float `*.weight` that is not an embedding table. It is packed when its
input dimension is a multiple of 32; otherwise, or when a --keep-16bit pattern names it,
it stays 16-bit and goes on the ignore list (quant_config.py). A weight of more than two
dimensions outside the towers (a mixture-of-experts stack, as in 26B A4B) stops the plan:
packing those is not implemented.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from benchstack_repack.dtypes import FLOAT_DTYPES
from benchstack_repack.qat_grid import GROUP_SIZE

BUILDS = ("text-only", "ple4", "emb4")
TOWER_WORDS = ("vision", "audio")
# Leaf names of embedding tables (as runners' preflight and vLLM treat them: not Linears).
EMBEDDING_LEAF = re.compile(
    r"embed_tokens(_per_layer)?|embeddings?|word_embeddings|position_embeddings|"
    r"embed_positions|wte|wpe|lm_head")
LM_HEAD = "lm_head"


@dataclass(frozen=True)
class Step:
    """One output module or tensor. `source` names the input tensor it is made from."""

    action: str  # "pack" (writes <module>.weight_packed/_scale/_shape) | "copy" | "drop"
    source: str
    module: str  # output name: the module for "pack", the tensor name otherwise
    reason: str


def module_of(tensor: str) -> str:
    return tensor.removesuffix(".weight")


def leaf(tensor: str) -> str:
    return module_of(tensor).rpartition(".")[2]


def is_tower(tensor: str) -> bool:
    return any(word in part for part in tensor.split(".") for word in TOWER_WORDS)


def is_linear_weight(name: str, dtype: str, shape: tuple[int, ...]) -> bool:
    return (name.endswith(".weight") and len(shape) == 2 and dtype in FLOAT_DTYPES
            and not EMBEDDING_LEAF.fullmatch(leaf(name)))


def _packable(shape: tuple[int, ...]) -> bool:
    return len(shape) == 2 and shape[1] % GROUP_SIZE == 0


def plan(build: str, tensors: dict[str, tuple[str, tuple[int, ...]]], *,
         lm_head_duplicate: bool, keep_16bit: list[str] = ()) -> list[Step]:
    """The steps for `build` over `tensors` (name -> (dtype, shape)), in source order.

    lm_head_duplicate: the source's lm_head.weight is a copy of embed_tokens and the
    config ties them (tied_head.py), so the copy can go.
    """
    if build not in BUILDS:
        raise ValueError(f"build {build!r}: choose one of {', '.join(BUILDS)}")
    keep = [re.compile(p) for p in keep_16bit]
    pack_tables = {"ple4": {"embed_tokens_per_layer"},
                   "emb4": {"embed_tokens_per_layer", "embed_tokens", LM_HEAD}}.get(build, set())
    steps = []
    for name, (dtype, shape) in tensors.items():
        kind = leaf(name)
        if is_tower(name):
            steps.append(Step("drop", name, name, "vision/audio tower"))
        elif kind == LM_HEAD and lm_head_duplicate and build != "emb4":
            steps.append(Step("drop", name, name, "duplicate of embed_tokens (tied)"))
        elif len(shape) > 2 and dtype in FLOAT_DTYPES and name.endswith(".weight"):
            raise ValueError(f"{name}: a {len(shape)}-D weight (mixture-of-experts experts?) "
                             "is not handled by this tool; it would be left at 16-bit where "
                             "the engine expects it packed")
        elif any(p.search(name) for p in keep):
            steps.append(Step("copy", name, name, "--keep-16bit"))
        elif name.endswith(".weight") and kind in pack_tables and _packable(shape) \
                and dtype in FLOAT_DTYPES:
            steps.append(Step("pack", name, module_of(name), f"{build}: 4-bit table"))
        elif is_linear_weight(name, dtype, shape):
            if _packable(shape):
                steps.append(Step("pack", name, module_of(name), "Linear"))
            else:
                steps.append(Step("copy", name, name,
                                  f"input dimension {shape[1]} is not a multiple of "
                                  f"{GROUP_SIZE}"))
        else:
            steps.append(Step("copy", name, name, "not a Linear weight"))
    has_head = any(leaf(n) == LM_HEAD and not is_tower(n) for n in tensors)
    if build == "emb4" and not has_head:
        embed = [s for s in steps if s.action == "pack" and leaf(s.source) == "embed_tokens"]
        if embed:
            steps.append(Step("pack", embed[0].source, LM_HEAD,
                              "emb4: lm_head untied, packed from embed_tokens"))
    return steps
