"""FP8 (e4m3fn) weights on the host: encoding, per-output-channel scales, dequantization.

The FP8 GEMMs (``fp8.py``, ``kernels/fp8.hip``) compute ``y = x · Wᵀ`` as
``D = a_scale · ref · (Xq · Wqᵀ)`` in cuBLASLt, then ``y = D · col_scale[n]`` in the epilogue
kernel, with

* ``Wq[n] = e4m3(W[n] / s[n])``, ``s[n] = max(amax_n, amax / CHANNEL_RANGE) / E4M3_MAX``: one
  scale per output channel, so each channel uses the whole e4m3 range;
* ``ref = min(s)`` (cuBLASLt's per-tensor alpha) and ``col_scale = s / ref`` (>= 1, at most
  ``CHANNEL_RANGE``): the fp16 ``D`` is then never larger in magnitude than the true product
  ``y`` (no fp16 overflow that the fp16 path would not have too) and at most ``CHANNEL_RANGE``
  times smaller (no underflow in practice);
* channels whose weights are all zero (the QKV projection's alignment rows) get the smallest
  scale and quantize to zeros; an all-zero matrix gets scale 1.

Why the floor ``amax / CHANNEL_RANGE``: it bounds ``col_scale`` (above) at no cost in precision,
because e4m3 is a floating-point format: a channel whose largest weight is 1/256 of the
matrix's still has 3 mantissa bits on every weight down to 2^-6 of its own maximum.

``e4m3_encode`` is written here (integer arithmetic on the float32 bits, vectorised) rather than
taken from ``ml_dtypes``: the device image and the ``cuda`` extra need no extra package for it,
and it must match the kernels' software conversion bit for bit (``kernels/fp8.hip``
``e4m3_soft``). The tests check it against ``ml_dtypes.float8_e4m3fn`` where that is installed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Blocks of the device's amax grid (kernels/fp8.hip LC0_FP8_PARTIALS): the per-tensor maximum is
#: reduced from this many per-block maxima (the buffer plan sizes them, fp8.py launches them)
FP8_PARTIALS = 512
E4M3_MAX = 448.0  # largest finite e4m3fn value (S.1111.110)
CHANNEL_RANGE = 256.0  # the smallest per-channel scale is at least 1/256 of the largest
_NAN_CODE = 0x7F


def e4m3_encode(x: np.ndarray) -> np.ndarray:
    """e4m3fn codes (``uint8``) of ``x``: round to nearest even, saturating at ±448 (±inf too),
    NaN -> ``0x7f`` with the sign bit of the input. Same result as ``kernels/fp8.hip``'s
    ``e4m3_soft`` (and as NVIDIA's ``cvt.rn.satfinite.e4m3x2.f32``)."""
    bits = np.ascontiguousarray(x, np.float32).view(np.uint32)
    sign = ((bits >> np.uint32(24)) & np.uint32(0x80)).astype(np.uint32)
    a = bits & np.uint32(0x7FFFFFFF)
    nan = a > np.uint32(0x7F800000)
    a = np.minimum(a, np.uint32(0x43E00000))  # 448 (and +inf) saturate; NaN handled below
    # normal range (>= 2^-6): keep 3 mantissa bits, round to nearest even, rebias 127 -> 7
    r = (a + np.uint32(0x7FFFF) + ((a >> np.uint32(20)) & np.uint32(1))) & np.uint32(0xFFF00000)
    normal = (((r >> np.uint32(23)) - np.uint32(120)) << np.uint32(3)) | ((r >> np.uint32(20)) & np.uint32(7))
    # subnormal range (< 2^-6): multiples of 2^-9, exact in float32, rint rounds half to even
    sub = np.rint(a.view(np.float32) * np.float32(512.0)).astype(np.uint32)
    code = np.where(a < np.uint32(0x3C800000), sub, normal)
    code = np.where(nan, np.uint32(_NAN_CODE), code)
    return (code | sign).astype(np.uint8)


def e4m3_decode(q: np.ndarray) -> np.ndarray:
    """float32 values of e4m3fn codes (``0x7f``/``0xff``: NaN)."""
    q = np.asarray(q, np.uint8).astype(np.int32)
    sign = np.where(q & 0x80, -1.0, 1.0)
    e = (q >> 3) & 0xF
    m = q & 7
    mag = np.where(e == 0, m / 8.0 * 2.0**-6, (1.0 + m / 8.0) * np.exp2(e - 7.0))
    mag = np.where((q & 0x7F) == _NAN_CODE, np.nan, mag)
    return (sign * mag).astype(np.float32)


@dataclass(frozen=True)
class Fp8Weight:
    """One weight matrix ``W [N, K]`` in FP8: ``W ≈ decode(q) · (ref · col_scale)[:, None]``."""

    q: np.ndarray  # uint8 [N, K] e4m3fn codes
    col_scale: np.ndarray  # float32 [N]: scale[n] / ref (the epilogue's factor, >= 1)
    ref: float  # the per-tensor part (cuBLASLt's alpha)

    @property
    def scale(self) -> np.ndarray:
        """The per-channel dequantization scale ``s[n]`` (float64)."""
        return self.col_scale.astype(np.float64) * self.ref

    def dequantize(self) -> np.ndarray:
        """``decode(q) · s[n]`` as float64 ``[N, K]``: the weight the FP8 GEMM multiplies by."""
        return e4m3_decode(self.q).astype(np.float64) * self.scale[:, None]


def _checked(w: np.ndarray, what: str) -> np.ndarray:
    w = np.asarray(w, np.float64)
    if w.ndim != 2:
        raise ValueError(f"{what}: FP8 weights are 2-D [out, in], got shape {w.shape}")
    if not np.all(np.isfinite(w)):
        raise ValueError(f"{what}: NaN or infinite weight, cannot quantize to FP8")
    return w


def quantize_per_channel(w: np.ndarray, what: str = "weight") -> Fp8Weight:
    """``w [N, K]`` with one scale per output channel (row), see the module docstring."""
    w = _checked(w, what)
    amax_n = np.abs(w).max(axis=1, initial=0.0)
    amax = float(amax_n.max(initial=0.0))
    if amax == 0.0:
        return Fp8Weight(np.zeros(w.shape, np.uint8), np.ones(w.shape[0], np.float32), 1.0)
    scale = np.maximum(amax_n, amax / CHANNEL_RANGE) / E4M3_MAX
    ref = float(scale.min())
    q = e4m3_encode((w / scale[:, None]).astype(np.float32))
    return Fp8Weight(q, (scale / ref).astype(np.float32), ref)


def quantize_per_tensor(w: np.ndarray, what: str = "weight") -> Fp8Weight:
    """``w [N, K]`` with one scale for the whole matrix (``col_scale`` all ones): for a GEMM whose
    output has no epilogue pass to apply per-channel factors in (the smolgen generator)."""
    w = _checked(w, what)
    amax = float(np.abs(w).max(initial=0.0))
    ref = amax / E4M3_MAX if amax > 0.0 else 1.0
    q = e4m3_encode((w / ref).astype(np.float32))
    return Fp8Weight(q, np.ones(w.shape[0], np.float32), ref)


def quantize_activation(x: np.ndarray) -> tuple[np.ndarray, float]:
    """The device's per-tensor activation quantization on the host (``fp8_quantize``):
    ``(e4m3(x · 448 / amax), amax / 448)``, scale 1 for an all-zero tensor. For tests and the
    self-test's reference."""
    x = np.asarray(x, np.float32)
    amax = float(np.abs(x).max(initial=0.0))
    if amax == 0.0:
        return e4m3_encode(x), 1.0
    a32 = np.float32(amax)  # float32 division, as the kernel does it
    inv = np.float32(E4M3_MAX) / a32
    return e4m3_encode(x * inv), float(a32 / np.float32(E4M3_MAX))


def quantize_per_channel_gptq(w: np.ndarray, h: np.ndarray, damp: float = 0.01,
                              what: str = "weight") -> Fp8Weight:
    """``w [N, K]`` with ``quantize_per_channel``'s scales but codes chosen by GPTQ (Frantar et
    al. 2022) against the inputs' second moments ``h = Σ xᵀx [K, K]``: column by column, each
    column's rounding error is spread over the columns not yet quantized so that the layer's
    output ``x·Wᵀ`` (not the weight itself) stays close. Same format, same GEMM, same cost as
    round-to-nearest; on the real residual nets it cuts the weights' own error (weights alone in
    FP8) 2-4x (docs/fp8.md). ``damp``: the fraction of ``h``'s mean diagonal added to it (stability);
    inputs that are always zero (``h[k, k] == 0``) get their weights zeroed, as they never count."""
    w = _checked(w, what).copy()
    n, k = w.shape
    h = np.array(h, np.float64)
    if h.shape != (k, k) or not np.all(np.isfinite(h)):
        raise ValueError(f"{what}: GPTQ needs a finite [{k}, {k}] input moment matrix, got {h.shape}")
    amax_n = np.abs(w).max(axis=1, initial=0.0)
    amax = float(amax_n.max(initial=0.0))
    if amax == 0.0:
        return Fp8Weight(np.zeros(w.shape, np.uint8), np.ones(n, np.float32), 1.0)
    scale = np.maximum(amax_n, amax / CHANNEL_RANGE) / E4M3_MAX
    ref = float(scale.min())
    col_scale = (scale / ref).astype(np.float32)
    s = col_scale.astype(np.float64) * ref  # the scale the device multiplies by (Fp8Weight.scale)
    dead = np.diag(h) <= 0.0
    h[dead, dead] = 1.0
    w[:, dead] = 0.0
    h += damp * float(np.mean(np.diag(h))) * np.eye(k)
    u = np.linalg.cholesky(np.linalg.inv(h)).T  # upper Cholesky factor of h⁻¹
    q = np.zeros((n, k), np.uint8)
    for i in range(k):
        qi = e4m3_encode((w[:, i] / s).astype(np.float32))
        q[:, i] = qi
        err = (w[:, i] - e4m3_decode(qi).astype(np.float64) * s) / u[i, i]
        w[:, i + 1 :] -= np.outer(err, u[i, i + 1 :])
    return Fp8Weight(q, col_scale, ref)
