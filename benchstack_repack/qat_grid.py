"""Recover the 4-bit QAT grid from 16-bit weights, and measure how well it fits.

Google's `-qat-q4_0-unquantized` checkpoints hold weights that quantization-aware training
left on llama.cpp's q4_0 grid, stored at bf16: along each row, every group of 32 values is
d x q with one scale d per group and integers q in [-8, 7]. q4_0 picks d from the group's
value of largest magnitude, `max`, as d = max / -8 (ggml/src/ggml-quants.c,
quantize_row_q4_0_ref), so that value is exactly q = -8 and d is negative when `max` is
positive. The scales written here are signed for the same reason: with a positive scale a
positive extreme would need q = +8, which int4 does not have. compressed-tensors and vLLM
dequantize as q x scale (compressed_tensors/quantization/lifecycle/forward.py, dequantize),
which holds for either sign.

Per group two grids are tried: the q4_0 one (extreme at q = -8, scale = -extreme / 8) and,
where that one does not fit, one with the extreme at q = +7 (scale = extreme / 7, for
checkpoints quantized that way); the one with the smaller worst error wins. The scale is
rounded to float16 (what is stored) before q is computed, so every figure below describes
the bytes written.

Off the grid: a group whose worst |q x scale - x| exceeds OFF_GRID_TOLERANCE of its largest
magnitude. On a true grid the only errors are bf16 rounding of each value and of the
extreme the scale is read from, each at most 2^-8 relative, which bounds the error by
(1 + 7/8) x 2^-8 = 0.73% of the group max; the tolerance is 2^-7 = 0.78%. Values not on a
grid are typically off by up to half a step, 1/16 = 6.25% of the group max.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from benchstack_repack import dtypes

GROUP_SIZE = 32
Q_MIN, Q_MAX = -8, 7
OFF_GRID_TOLERANCE = 2.0 ** -7
MAX_EXAMPLES = 5


@dataclass(frozen=True)
class Int4Groups:
    """A 2-D tensor on the int4 grid: q[r, c] x scale[r, c // 32]."""

    q: np.ndarray  # int8, shape (rows, cols), values in [-8, 7]
    scale_f16: np.ndarray  # float16, shape (rows, cols // 32)


def _fit(groups: np.ndarray, scale_f16: np.ndarray, magnitude: np.ndarray):
    """q for one candidate scale per group, and each group's worst error over its max."""
    scale = scale_f16.astype(np.float32)[..., None]
    usable = np.isfinite(scale) & (scale != 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(usable, np.rint(groups / np.where(usable, scale, 1)), 0)
    q = np.clip(q, Q_MIN, Q_MAX)
    err = np.abs(q * np.where(usable, scale, 0) - groups).max(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = np.where(magnitude > 0, err / magnitude, np.where(err > 0, np.inf, 0))
    relative = np.where(np.isfinite(scale_f16) | (magnitude == 0), relative, np.inf)
    return q.astype(np.int8), relative


def fit_int4(values: np.ndarray) -> tuple[Int4Groups, np.ndarray]:
    """Int4 grid for a float32 (rows, cols) array, cols a multiple of 32; also each
    group's worst error relative to its largest magnitude (rows, cols // 32).

    The q4_0 grid is tried on every group, the +7 grid only on the groups the first one
    does not fit (on a q4_0 checkpoint, none), which halves the work."""
    rows, cols = values.shape
    groups = values.reshape(rows, cols // GROUP_SIZE, GROUP_SIZE)
    where = np.abs(groups).argmax(axis=-1)[..., None]
    extreme = np.take_along_axis(groups, where, axis=-1)[..., 0]
    magnitude = np.abs(extreme)
    with np.errstate(over="ignore"):
        scale = (-extreme / -Q_MIN).astype(np.float16)
    q, err = _fit(groups, scale, magnitude)
    retry = ~(err <= OFF_GRID_TOLERANCE)
    if retry.any():
        with np.errstate(over="ignore"):
            other = (extreme[retry] / Q_MAX).astype(np.float16)
        q2, err2 = _fit(groups[retry], other, magnitude[retry])
        better = err2 < err[retry]
        q[retry] = np.where(better[:, None], q2, q[retry])
        scale[retry] = np.where(better, other, scale[retry])
        err[retry] = np.where(better, err2, err[retry])
    return Int4Groups(q.reshape(rows, cols), scale), err


def dequantize_f32(packed: Int4Groups) -> np.ndarray:
    """q x scale in float32: exact, a float16 times an integer of at most 4 bits."""
    scale = np.repeat(packed.scale_f16.astype(np.float32), GROUP_SIZE, axis=1)
    return packed.q.astype(np.float32) * scale


@dataclass
class GridStats:
    """Running verification figures for one tensor, accumulated chunk by chunk."""

    groups: int = 0
    off_grid_groups: int = 0
    values: int = 0
    bit_identical_values: int = 0
    worst_error_of_group_max: float = 0.0
    off_grid_examples: list[dict] = field(default_factory=list)

    def add(self, source_raw: np.ndarray, source_dtype: str, packed: Int4Groups,
            relative_error: np.ndarray, first_row: int) -> None:
        """Fold in one chunk of rows. Bit-identical: the dequantized value, rounded to the
        source dtype, has exactly the source's bits."""
        restored = dtypes.stored_bits(dequantize_f32(packed), source_dtype)
        original = source_raw.view(restored.dtype)
        self.values += original.size
        self.bit_identical_values += int(np.count_nonzero(restored == original))
        self.groups += relative_error.size
        off = ~(relative_error <= OFF_GRID_TOLERANCE)
        self.off_grid_groups += int(np.count_nonzero(off))
        finite = relative_error[np.isfinite(relative_error)]
        if finite.size:
            self.worst_error_of_group_max = max(self.worst_error_of_group_max,
                                                float(finite.max()))
        if np.any(~np.isfinite(relative_error)):
            self.worst_error_of_group_max = float("inf")
        for r, g in np.argwhere(off)[: MAX_EXAMPLES - len(self.off_grid_examples)]:
            self.off_grid_examples.append({
                "row": first_row + int(r), "group": int(g),
                "error_of_group_max": float(relative_error[r, g])})

    @property
    def off_grid_share(self) -> float:
        return self.off_grid_groups / self.groups if self.groups else 0.0

    @property
    def bit_identical_share(self) -> float:
        return self.bit_identical_values / self.values if self.values else 1.0
