"""benchstack_repack: QAT q4_0 checkpoints -> compressed-tensors W4A16 (pack-quantized).

A tool beside benchstack, not part of it: numpy and safetensors only (requirements.txt
here), never imported by runners/ nor shipped in the Lambda asset. `./dev repack SRC DST
--build text-only|ple4|emb4`; the format and the builds are described in docs/repack.md.
"""
