"""The bit-level pieces: bf16 conversion, int4 packing order, the grid fit."""

from __future__ import annotations

import numpy as np
import pytest

from benchstack_repack import dtypes
from benchstack_repack.int4_pack import pack_int4_rows
from benchstack_repack.qat_grid import GridStats, OFF_GRID_TOLERANCE, fit_int4
from tests.repack.checkpoints import decode_int4, from_bf16_bits, qat_bits, random_bits


def test_bf16_round_trip_and_rounding():
    bits = np.array([0x3F80, 0xBF80, 0x0000, 0x8000, 0x7F80, 0x3E4D], dtype=np.uint16)
    values = dtypes.bf16_bits_to_f32(bits)
    assert values[:5].tolist() == [1.0, -1.0, 0.0, -0.0, float("inf")]
    assert np.array_equal(dtypes.f32_to_bf16_bits(values), bits)
    # 1 + 2^-8 is halfway between bf16 1.0 and 1.0078125: ties to even -> 1.0
    halfway = np.array([1 + 2 ** -8, 1 + 3 * 2 ** -8], dtype=np.float32)
    assert dtypes.f32_to_bf16_bits(halfway).tolist() == [0x3F80, 0x3F82]


def test_pack_order_is_compressed_tensors():
    """Element i of a row at bits 4i of the row's bit string, offset by 8: elements 0..7 =
    -8..-1 give 0x76543210, elements 8..15 = 0..7 give 0xFEDCBA98 (negative as int32)."""
    q = np.array([list(range(-8, 8))], dtype=np.int8)
    words = pack_int4_rows(q)
    assert words.dtype == np.int32
    assert words.view(np.uint32).tolist() == [[0x76543210, 0xFEDCBA98]]


def test_on_grid_groups_recovered():
    rng = np.random.default_rng(1)
    bits = qat_bits(rng, 64, 256)
    grid, error = fit_int4(from_bf16_bits(bits))
    assert grid.q.min() >= -8 and grid.q.max() <= 7
    assert error.max() <= OFF_GRID_TOLERANCE
    stats = GridStats()
    stats.add(bits, "BF16", grid, error, 0)
    assert stats.off_grid_groups == 0 and stats.groups == 64 * 8
    assert 0.5 < stats.bit_identical_share < 1.0  # bf16 rounding of d x q: not all exact
    decoded = decode_int4(pack_int4_rows(grid.q), grid.scale_f16, np.array([64, 256]))
    groups_max = np.abs(from_bf16_bits(bits)).reshape(64, 8, 32).max(axis=-1)
    worst = np.abs(decoded - from_bf16_bits(bits)).reshape(64, 8, 32).max(axis=-1)
    assert (worst <= OFF_GRID_TOLERANCE * groups_max).all()


def test_exact_grid_is_bit_identical():
    """A grid whose scales are exact in bf16 and f16 (powers of two) round-trips exactly,
    including negative scales: the group's extreme positive value sits at q = -8."""
    q = np.tile(np.arange(-8, 8, dtype=np.float32), 4).reshape(2, 32)
    values = np.stack([q[0] * 2.0 ** -7, q[1] * -(2.0 ** -5)])
    bits = dtypes.f32_to_bf16_bits(values)
    grid, error = fit_int4(dtypes.bf16_bits_to_f32(bits))
    stats = GridStats()
    stats.add(bits, "BF16", grid, error, 0)
    assert stats.bit_identical_share == 1.0 and stats.worst_error_of_group_max == 0.0
    assert grid.scale_f16.tolist() == [[2.0 ** -7], [-(2.0 ** -5)]]


def test_off_grid_groups_counted_with_where():
    rng = np.random.default_rng(2)
    bits = qat_bits(rng, 8, 64)
    bits[3, 32:] = random_bits(rng, 1, 32)[0]
    grid, error = fit_int4(from_bf16_bits(bits))
    stats = GridStats()
    stats.add(bits, "BF16", grid, error, first_row=100)
    assert stats.off_grid_groups == 1
    assert stats.off_grid_examples[0]["row"] == 103 and stats.off_grid_examples[0]["group"] == 1
    assert stats.off_grid_examples[0]["error_of_group_max"] > OFF_GRID_TOLERANCE


def test_zero_group_is_on_grid():
    grid, error = fit_int4(np.zeros((1, 32), dtype=np.float32))
    assert error.tolist() == [[0.0]] and not grid.q.any()


@pytest.mark.parametrize("dtype", ["F16", "F32"])
def test_other_float_sources(dtype):
    rng = np.random.default_rng(3)
    values = from_bf16_bits(qat_bits(rng, 4, 64))
    raw = values.astype(dtypes.STORED[dtype])
    grid, error = fit_int4(dtypes.to_f32(raw, dtype))
    assert error.max() <= OFF_GRID_TOLERANCE


def test_plus_seven_grid_is_recovered_where_q4_0_does_not_fit():
    """Groups quantized with the extreme at q = +7 (no -8 present) are on a grid too."""
    rng = np.random.default_rng(4)
    q = rng.integers(-7, 8, size=(4, 2, 32)).astype(np.float32)
    q[:, :, 0] = 7
    values = (q * np.float32(2.0 ** -6)).reshape(4, 64)
    grid, error = fit_int4(values)
    assert error.max() == 0.0
    assert np.array_equal(grid.q, q.reshape(4, 64).astype(np.int8))
    assert (grid.scale_f16 == np.float16(2.0 ** -6)).all()
