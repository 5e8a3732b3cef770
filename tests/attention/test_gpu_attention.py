"""On a GPU: ``lc0py.attention``'s flash and naive paths against the numpy float64 reference, for
layouts x causal x bias/mask x GQA/MQA x lengths (1, 7, 64, 300, q != k, 2048) x depths
(32, 64, 96, 128, 256). Marked ``gpu``; skipped without an NVIDIA GPU (cuda-python, driver)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from lc0py.attention import attention
from lc0py.attention.reference import attention_numpy
from lc0py.backends.accuracy import flash_tolerance, relative_error
from tests.nvidia import require_nvidia_gpu

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def engine():  # type: ignore[no-untyped-def]
    require_nvidia_gpu()
    from lc0py.attention.gpu import GpuAttention

    eng = GpuAttention(vendor="nvidia")
    yield eng
    eng.close()


SHAPES = [(4, 4, 1, 1), (4, 4, 7, 7), (4, 2, 64, 64), (4, 1, 7, 300), (2, 2, 300, 64), (8, 2, 300, 300)]


def _case(seed: int, heads: int, kv_heads: int, lq: int, lk: int, d: int, extra: str):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    b = 2
    q = rng.standard_normal((b, heads, lq, d)).astype(np.float16)
    k = rng.standard_normal((b, kv_heads, lk, d)).astype(np.float16)
    v = rng.standard_normal((b, kv_heads, lk, d)).astype(np.float16)
    bias = (2 * rng.standard_normal((b, 1, lq, lk))).astype(np.float32) if extra in ("bias", "both") else None
    mask = None
    if extra in ("mask", "both"):
        mask = rng.random((1, heads, lq, lk)) > 0.25
        mask[0, 0, 0, :] = False  # a row with no key -> 0
    return q, k, v, bias, mask


def _check(got: np.ndarray, want: np.ndarray, what: str) -> None:
    err = relative_error(got, want)  # inf on NaN/inf
    assert err < 5e-3, f"{what}: relative error {err:.3g}"


@pytest.mark.parametrize("impl", ["flash", "naive"])
@pytest.mark.parametrize("layout", ["bhsd", "interleaved"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("extra", ["none", "bias", "mask", "both"])
def test_against_reference(engine, impl: str, layout: str, causal: bool, extra: str) -> None:  # type: ignore[no-untyped-def]
    for i, ((h, hk, lq, lk), d) in enumerate(itertools.product(SHAPES, (32, 64, 96, 128, 256))):
        if d in (96, 256) and (lq, lk) != (300, 300):
            continue  # odd depths on the largest shape only (CI time)
        q, k, v, bias, mask = _case(i, h, hk, lq, lk, d, extra)
        want = attention_numpy(q, k, v, layout="bhsd", bias=bias, mask=mask, causal=causal, dtype=np.float64)
        if layout == "interleaved":
            qi, ki, vi = (x.transpose(0, 2, 1, 3).reshape(x.shape[0], x.shape[2], -1) for x in (q, k, v))
            got = attention(
                qi,
                ki,
                vi,
                layout=layout,
                heads=h,
                bias=bias,
                mask=mask,
                causal=causal,
                impl=impl,
                engine=engine,
            )
            got = got.reshape(q.shape[0], lq, h, d).transpose(0, 2, 1, 3)
        else:
            got = attention(
                q, k, v, layout=layout, bias=bias, mask=mask, causal=causal, impl=impl, engine=engine
            )
        _check(got, want, f"{impl} {layout} causal={causal} {extra} H{h}/{hk} {lq}x{lk} d{d}")


@pytest.mark.parametrize("impl", ["flash", "naive"])
def test_long_sequence_and_device_arrays(engine, impl: str) -> None:  # type: ignore[no-untyped-def]
    q, k, v, _, _ = _case(5, 4, 2, 2048, 2048, 64, "none")
    want = attention_numpy(q, k, v, layout="bhsd", causal=True, dtype=np.float64)
    dq, dk, dv = (engine.to_device(x) for x in (q, k, v))
    engine.release_workspace()
    engine.reset_peak()
    base = engine.current_bytes
    out = attention(dq, dk, dv, layout="bhsd", causal=True, impl=impl, engine=engine)
    _check(out.numpy(), want, f"{impl} 2048 causal")
    grew = engine.peak_bytes - base
    if impl == "flash":
        assert grew == out.nbytes  # only the output: no O(L^2) buffer
    else:
        assert grew >= out.nbytes + 2 * 4 * 2048 * 2048 * 2  # the scores
    engine.release_workspace()
    for x in (dq, dk, dv, out):
        x.free()


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("extra", ["none", "both"])
def test_flash_within_twice_naive(engine, causal: bool, extra: str) -> None:  # type: ignore[no-untyped-def]
    """flash-attention's own rule (lc0py.backends.accuracy.flash_tolerance): the fused kernel's
    error against float64 is at most twice the unfused fp16 path's plus fp16's rounding unit."""
    for i, (h, hk, lq, lk) in enumerate(SHAPES):
        q, k, v, bias, mask = _case(100 + i, h, hk, lq, lk, 64, extra)
        want = attention_numpy(q, k, v, layout="bhsd", bias=bias, mask=mask, causal=causal, dtype=np.float64)
        errors = {}
        for impl in ("flash", "naive"):
            got = attention(
                q, k, v, layout="bhsd", bias=bias, mask=mask, causal=causal, impl=impl, engine=engine
            )
            errors[impl] = relative_error(got, want)
        bound = flash_tolerance(errors["naive"], fp16=True)
        assert errors["flash"] <= bound, f"H{h}/{hk} {lq}x{lk}: flash {errors['flash']:.3g} > {bound:.3g}"
