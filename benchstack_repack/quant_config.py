"""config.json for a repacked build: the compressed-tensors quantization_config.

The schema is compressed-tensors' QuantizationConfig / QuantizationScheme /
QuantizationArgs (compressed_tensors/quantization/quant_config.py, quant_scheme.py,
quant_args.py, 0.20.0) as ModelCompressor.update_config writes it
(compressors/model_compressors/model_compressor.py): one config group of symmetric int4
weights, strategy "group", group_size 32, no activation quantization (W4A16), format
"pack-quantized", status "compressed". The scales' float16 dtype is stated by the shards'
headers, not by a `scale_dtype` field: QuantizationArgs forbids unknown fields, and older
compressed-tensors releases, as an engine image may carry, do not know that one.

Targets: "Linear", plus the exact names of packed modules that are not Linears in the
model (embedding tables, and lm_head, which vLLM builds as an embedding-like layer).
Ignore: every Linear left at 16-bit, and lm_head whenever it is not packed; a 16-bit
Linear missing from it makes vLLM look for weight_packed and fail at load, ~30 minutes
into a SageMaker endpoint's creation.
"""

from __future__ import annotations

import copy

from benchstack_repack import builds
from benchstack_repack.builds import Step

FORMAT = "pack-quantized"
FORMAT_VERSION = "0.20.0"  # the compressed-tensors release this layout was read from


def ignore_list(steps: list[Step], tensors: dict[str, tuple[str, tuple[int, ...]]]) -> list[str]:
    """Modules whose Linear weight is written at 16-bit, plus lm_head when not packed."""
    ignored = {builds.module_of(s.module) for s in steps if s.action == "copy"
               and builds.is_linear_weight(s.source, *tensors[s.source])}
    if not any(s.action == "pack" and builds.leaf(s.module) == builds.LM_HEAD for s in steps):
        ignored.add(builds.LM_HEAD)
    return sorted(ignored)


def targets(steps: list[Step], tensors: dict[str, tuple[str, tuple[int, ...]]]) -> list[str]:
    """"Linear" and each packed table (embeddings, lm_head) by its exact module name."""
    named = {s.module for s in steps if s.action == "pack"
             and not builds.is_linear_weight(s.source, *tensors[s.source])}
    return ["Linear", *sorted(named)]


def quantization_config(steps: list[Step],
                        tensors: dict[str, tuple[str, tuple[int, ...]]]) -> dict:
    return {
        "quant_method": "compressed-tensors",
        "format": FORMAT,
        "quantization_status": "compressed",
        "version": FORMAT_VERSION,
        "config_groups": {
            "group_0": {
                "targets": targets(steps, tensors),
                "weights": {"num_bits": 4, "type": "int", "symmetric": True,
                            "strategy": "group", "group_size": 32, "dynamic": False,
                            "actorder": None},
                "input_activations": None,
                "output_activations": None,
                "format": FORMAT,
            },
        },
        "ignore": ignore_list(steps, tensors),
        "kv_cache_scheme": None,
        "global_compression_ratio": None,
        "sparsity_config": {},
        "transform_config": {},
    }


def _set_tied(config: dict, tied: bool) -> None:
    config["tie_word_embeddings"] = tied
    if isinstance(config.get("text_config"), dict):
        config["text_config"]["tie_word_embeddings"] = tied


def build_config(source_config: dict, steps: list[Step],
                 tensors: dict[str, tuple[str, tuple[int, ...]]]) -> dict:
    """The source's config with the quantization_config replaced; emb4 (a packed lm_head)
    sets tie_word_embeddings false, top level and text_config alike."""
    config = copy.deepcopy(source_config)
    config["quantization_config"] = quantization_config(steps, tensors)
    if any(s.action == "pack" and builds.leaf(s.module) == builds.LM_HEAD for s in steps):
        _set_tied(config, False)
    return config
