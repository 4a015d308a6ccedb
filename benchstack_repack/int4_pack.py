"""compressed-tensors "pack-quantized" packing of int4 values into int32 words.

The layout, from compressed_tensors/compressors/pack_quantized/helpers.py (pack_to_int32,
compressed-tensors 0.20.0): each value is offset to unsigned (q + 8, 0..15), and along the
last dimension element i of a row lands at bit 4 x i of the row's packed bit string, so
word j holds elements 8j..8j+7 with element 8j in bits 0-3 and element 8j+7 in bits 28-31.
The words are int32 (two's complement of that bit pattern), stored little-endian.
vLLM reads the same tensor as `weight_packed` with pack_factor 8 along the input dimension
(vllm/model_executor/layers/quantization/compressed_tensors/schemes/
compressed_tensors_wNa16.py) before repacking it for its Marlin kernel.
"""

from __future__ import annotations

import numpy as np

VALUES_PER_WORD = 8
OFFSET = 8  # 1 << (num_bits - 1)
_SHIFTS = np.arange(0, 32, 4, dtype=np.uint32)


def pack_int4_rows(q: np.ndarray) -> np.ndarray:
    """int8 (rows, cols) with values in [-8, 7], cols a multiple of 8 -> int32
    (rows, cols // 8)."""
    rows, cols = q.shape
    nibbles = (q.astype(np.int16) + OFFSET).astype(np.uint32)
    nibbles = nibbles.reshape(rows, cols // VALUES_PER_WORD, VALUES_PER_WORD)
    words = np.bitwise_or.reduce(nibbles << _SHIFTS, axis=-1)
    return words.astype(np.uint32).view(np.int32)
