"""safetensors dtypes as numpy sees them, and bfloat16 without a bfloat16 type.

numpy has no bfloat16. A bf16 value is the upper 16 bits of the float32 with the same
sign, exponent and top 7 mantissa bits, so it is read as raw little-endian uint16 and
widened by shifting those bits into the top half of a uint32 (exact: every bf16 is a
float32). Going back rounds to nearest, ties to even, the way torch converts.
"""

from __future__ import annotations

import numpy as np

# The float dtypes a weight is packed from -> numpy dtype of their stored bytes
# (little-endian, as the format requires). BF16 is stored bits, never a number numpy can
# compute with.
STORED = {"BF16": np.dtype("<u2"), "F16": np.dtype("<f2"), "F32": np.dtype("<f4")}
FLOAT_DTYPES = frozenset(STORED)
ITEM_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2,
              "I8": 1, "U8": 1, "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1, "U16": 2, "U32": 4,
              "U64": 8}


def bf16_bits_to_f32(bits: np.ndarray) -> np.ndarray:
    """uint16 bf16 bit patterns -> float32 values, exactly."""
    return (bits.astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16_bits(values: np.ndarray) -> np.ndarray:
    """float32 -> uint16 bf16 bit patterns, round to nearest even (NaN stays NaN)."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> 16) & np.uint32(1))) >> 16
    nan = np.isnan(values)
    rounded[nan] = (bits[nan] >> 16) | np.uint32(0x40)
    return rounded.astype(np.uint16)


def to_f32(raw: np.ndarray, dtype: str) -> np.ndarray:
    """Stored values of a float tensor (bits for BF16) -> float32."""
    if dtype == "BF16":
        return bf16_bits_to_f32(raw)
    return raw.astype(np.float32)


def stored_bits(values_f32: np.ndarray, dtype: str) -> np.ndarray:
    """float32 values rounded to `dtype` and viewed as unsigned bits, so that two tensors
    compare bit for bit (NaN and -0.0 included)."""
    if dtype == "BF16":
        return f32_to_bf16_bits(values_f32)
    if dtype == "F16":
        return values_f32.astype(np.float16).view(np.uint16)
    return values_f32.astype(np.float32).view(np.uint32)
