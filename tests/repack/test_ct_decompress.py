"""compressed-tensors' own decompressor reads what the repack writes.

Needs torch and compressed-tensors (benchstack_repack/requirements-verify.txt), which
./dev test does not install: the test skips without them.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from benchstack_repack.repack import repack
from benchstack_repack.sources import LocalSource
from tests.repack import checkpoints as ck

torch = pytest.importorskip("torch", reason="torch is not installed "
                            "(pip install -r benchstack_repack/requirements-verify.txt)")
ct = pytest.importorskip("compressed_tensors", reason="compressed-tensors is not installed "
                         "(pip install -r benchstack_repack/requirements-verify.txt)")

pytestmark = pytest.mark.slow


def test_compressed_tensors_decompresses_every_packed_module(tmp_path):
    from compressed_tensors.compressors.pack_quantized.base import PackedQuantizationCompressor
    from compressed_tensors.compressors.pack_quantized.helpers import (pack_to_int32,
                                                                      unpack_from_int32)
    from compressed_tensors.quantization import QuantizationConfig, QuantizationScheme

    ck.gemma_like(tmp_path / "src", head="tied")
    repack(LocalSource(tmp_path / "src"), tmp_path / "emb4", "emb4", log=lambda line: None)
    qc = json.loads((tmp_path / "emb4" / "config.json").read_text())["quantization_config"]
    QuantizationConfig.model_validate(qc)  # the schema, as compressed-tensors parses it
    scheme = QuantizationScheme.model_validate(qc["config_groups"]["group_0"])
    out = ck.load_build(tmp_path / "emb4")
    modules = sorted(n.removesuffix(".weight_packed") for n in out if n.endswith("_packed"))
    assert len(modules) == 6  # 3 Linears, embed_tokens, embed_tokens_per_layer, lm_head
    for module in modules:
        state = {p: torch.from_numpy(out[f"{module}.{p}"].copy())
                 for p in ("weight_packed", "weight_scale", "weight_shape")}
        weight = PackedQuantizationCompressor.decompress(state, scheme)["weight"]
        ours = ck.decode_int4(*(out[f"{module}.{p}"] for p in
                                ("weight_packed", "weight_scale", "weight_shape")))
        assert weight.dtype == torch.float16
        assert np.array_equal(weight.numpy(), ours.astype(np.float16)), module
        q = unpack_from_int32(state["weight_packed"], 4, tuple(state["weight_shape"].tolist()))
        assert int(q.min()) >= -8 and int(q.max()) <= 7
        assert torch.equal(pack_to_int32(q, 4), state["weight_packed"]), module
