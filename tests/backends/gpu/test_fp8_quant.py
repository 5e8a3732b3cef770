"""Host side of the FP8 path (lc0py/backends/gpu/fp8_quant.py): the e4m3fn encoder, per-channel
and per-tensor weight scales, activation quantization. No GPU."""

from __future__ import annotations

import numpy as np
import pytest

from lc0py.backends.gpu.fp8_quant import (
    CHANNEL_RANGE,
    E4M3_MAX,
    e4m3_decode,
    e4m3_encode,
    quantize_activation,
    quantize_per_channel,
    quantize_per_tensor,
)

ALL_CODES = np.arange(256, dtype=np.uint8)
FINITE_CODES = ALL_CODES[(ALL_CODES & 0x7F) != 0x7F]


def test_every_finite_code_round_trips() -> None:
    values = e4m3_decode(FINITE_CODES)
    assert np.all(np.isfinite(values))
    back = e4m3_encode(values)
    # +0 and -0 are two codes; every other value has exactly one
    assert np.array_equal(back, FINITE_CODES)
    assert float(np.abs(values).max()) == E4M3_MAX
    assert float(values[FINITE_CODES == 1][0]) == 2.0**-9  # smallest subnormal


def test_encoder_matches_ml_dtypes_bit_for_bit() -> None:
    ml = pytest.importorskip("ml_dtypes")
    rng = np.random.default_rng(5)
    halves = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    halves = halves[np.isfinite(halves)].astype(np.float32)
    x = np.concatenate([
        halves,
        rng.standard_normal(200_000).astype(np.float32) * np.float32(10.0) ** rng.integers(-4, 3, 200_000),
        # ties: midpoints between neighbouring codes, both parities
        (e4m3_decode(FINITE_CODES[:-1]) + e4m3_decode(FINITE_CODES[1:])) / 2,
    ]).astype(np.float32)
    x = x[np.isfinite(x) & (np.abs(x) <= E4M3_MAX)]
    want = x.astype(ml.float8_e4m3fn).view(np.uint8)
    got = e4m3_encode(x)
    bad = got != want
    assert not bad.any(), f"{bad.sum()} differ, e.g. x={x[bad][:5]} got={got[bad][:5]} want={want[bad][:5]}"


def test_encoder_saturates_and_keeps_nan() -> None:
    x = np.array([449.0, 464.0, 1e6, np.inf, -1e30, -np.inf, np.nan, -np.nan], np.float32)
    codes = e4m3_encode(x)
    assert list(codes[:6]) == [0x7E, 0x7E, 0x7E, 0x7E, 0xFE, 0xFE]
    assert np.all(np.isnan(e4m3_decode(codes[6:])))


def test_per_channel_error_is_within_half_an_fp8_step() -> None:
    rng = np.random.default_rng(0)
    # channels of very different magnitudes, as trained nets have
    w = rng.standard_normal((96, 64)) * np.exp(rng.uniform(-3, 3, size=(96, 1)))
    fw = quantize_per_channel(w)
    assert fw.q.dtype == np.uint8 and fw.q.shape == w.shape
    assert np.all(np.isfinite(fw.col_scale)) and fw.col_scale.min() >= 1.0
    assert fw.col_scale.max() <= CHANNEL_RANGE * (1 + 1e-6)
    deq = fw.dequantize()
    assert np.all(np.isfinite(deq))
    # e4m3 keeps 3 mantissa bits: relative error <= 2^-4 on normals, absolute 2^-10 * scale below
    tol = np.maximum(np.abs(w) * 2.0**-4, fw.scale[:, None] * 2.0**-10) * (1 + 1e-6)
    assert np.all(np.abs(deq - w) <= tol)
    # each channel's largest weight lands on the top of the e4m3 range (unless floored)
    amax_n = np.abs(w).max(axis=1)
    big = amax_n >= np.abs(w).max() / CHANNEL_RANGE
    assert np.allclose(np.abs(e4m3_decode(fw.q)).max(axis=1)[big], E4M3_MAX, rtol=2.0**-4)
    rel = np.linalg.norm(deq - w) / np.linalg.norm(w)
    assert 1e-3 < rel < 0.04, rel  # quantized (not a copy) and about 2.5 % RMS


def test_zero_channels_and_zero_matrix() -> None:
    rng = np.random.default_rng(1)
    w = rng.standard_normal((8, 32))
    w[[0, 5]] = 0.0
    fw = quantize_per_channel(w)
    assert np.all(fw.q[[0, 5]] & 0x7F == 0)
    assert np.all(np.isfinite(fw.col_scale))
    assert np.array_equal(fw.dequantize()[[0, 5]], np.zeros((2, 32)))
    z = quantize_per_channel(np.zeros((4, 16)))
    assert z.ref == 1.0 and np.all(z.col_scale == 1.0) and not np.any(z.q)
    zt = quantize_per_tensor(np.zeros((4, 16)))
    assert zt.ref == 1.0 and not np.any(zt.dequantize())


def test_per_tensor_scale() -> None:
    rng = np.random.default_rng(2)
    w = rng.standard_normal((64, 48))
    fw = quantize_per_tensor(w)
    assert np.all(fw.col_scale == 1.0)
    assert fw.ref == pytest.approx(np.abs(w).max() / E4M3_MAX)
    assert np.linalg.norm(fw.dequantize() - w) / np.linalg.norm(w) < 0.05


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_weights_are_refused(bad: float) -> None:
    w = np.ones((4, 4))
    w[1, 2] = bad
    with pytest.raises(ValueError, match="qkv: NaN or infinite"):
        quantize_per_channel(w, "qkv")


def test_activation_quantization() -> None:
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((64, 32)) * 3).astype(np.float16).astype(np.float32)
    q, scale = quantize_activation(x)
    assert scale == pytest.approx(np.abs(x).max() / E4M3_MAX, rel=1e-6)
    back = e4m3_decode(q) * scale
    assert np.abs(e4m3_decode(q)).max() == E4M3_MAX
    assert np.linalg.norm(back - x) / np.linalg.norm(x) < 0.05
    q0, s0 = quantize_activation(np.zeros(16, np.float32))
    assert s0 == 1.0 and not np.any(q0)
