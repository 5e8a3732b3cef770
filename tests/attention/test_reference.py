"""The numpy implementation of ``lc0py.attention`` against a direct float64 formula (one loop per
query row and key, no shared code), for every combination the operator supports: layouts,
causal, bias, mask, grouped/multi-query heads, lengths 1/7/64/300 with q_len != kv_len."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from lc0py.attention import attention, attention_shape
from lc0py.errors import UsageError


def direct(q, k, v, bias, mask, causal, scale):  # type: ignore[no-untyped-def]
    """bhsd float64, written out per query row: which keys row i may see, their weights, the sum."""
    b_, h_, lq, d = q.shape
    hk, lk = k.shape[1], k.shape[2]
    out = np.zeros((b_, h_, lq, d))
    for b, h, i in itertools.product(range(b_), range(h_), range(lq)):
        kh = h // (h_ // hk)
        keys = np.arange(lk)
        ok = np.ones(lk, bool) if not causal else keys <= i
        if mask is not None:
            ok &= mask[b % mask.shape[0], h % mask.shape[1], i]
        if not ok.any():
            continue  # a row that sees no key: 0
        x = (k[b, kh, ok] @ q[b, h, i]) * scale  # one dot product per visible key
        if bias is not None:
            x = x + bias[b % bias.shape[0], h % bias.shape[1], i, ok]
        e = np.exp(x - x.max())
        out[b, h, i] = (e / e.sum()) @ v[b, kh, ok]
    return out


CASES = [  # (heads, kv_heads, q_len, kv_len)
    (2, 2, 1, 1),
    (2, 2, 7, 7),
    (4, 2, 7, 64),
    (4, 1, 64, 7),
    (3, 3, 64, 64),
    (2, 1, 300, 300),
    (4, 2, 7, 300),
]


@pytest.mark.parametrize(("heads", "kv_heads", "lq", "lk"), CASES)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("extra", ["none", "bias", "mask", "both"])
def test_numpy_matches_direct_formula(
    heads: int, kv_heads: int, lq: int, lk: int, causal: bool, extra: str
) -> None:
    if lq * lk > 64 * 64 and extra in ("mask", "both") and causal:
        pytest.skip("covered by the smaller shapes (CI time)")
    rng = np.random.default_rng(lq * 1000 + lk + heads)
    b, d = 2, 16
    q = rng.standard_normal((b, heads, lq, d))
    k = rng.standard_normal((b, kv_heads, lk, d))
    v = rng.standard_normal((b, kv_heads, lk, d))
    bias = rng.standard_normal((1, heads, lq, lk)) if extra in ("bias", "both") else None
    mask = rng.random((b, 1, lq, lk)) > 0.3 if extra in ("mask", "both") else None
    if mask is not None:
        mask[0, 0, 0, :] = False  # one row that sees nothing
    scale = 0.3
    want = direct(q, k, v, bias, mask, causal, scale)
    got = attention(q, k, v, layout="bhsd", bias=bias, mask=mask, causal=causal, scale=scale)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    # the interleaved layout is the same numbers in [B, L, H*d] rows
    qi, ki, vi = (x.transpose(0, 2, 1, 3).reshape(x.shape[0], x.shape[2], -1) for x in (q, k, v))
    got_i = attention(
        qi, ki, vi, layout="interleaved", heads=heads, bias=bias, mask=mask, causal=causal, scale=scale
    )
    np.testing.assert_allclose(
        got_i.reshape(b, lq, heads, d).transpose(0, 2, 1, 3), want, rtol=1e-4, atol=1e-5
    )


def test_defaults_and_2d_bias() -> None:
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((1, 2, 5, 8)) for _ in range(3))
    bias = rng.standard_normal((5, 5))
    want = direct(q, k, v, bias[None, None], None, False, 1 / math.sqrt(8))
    np.testing.assert_allclose(attention(q, k, v, layout="bhsd", bias=bias), want, rtol=1e-4, atol=1e-6)
    assert attention(q.astype(np.float32), k, v, layout="bhsd").dtype == np.float32


@pytest.mark.parametrize(
    ("shapes", "kw", "msg"),
    [
        (((1, 4, 8, 16), (1, 3, 8, 16)), {}, "multiple of 3 K/V heads"),
        (((1, 8, 64), (1, 8, 64)), {}, "needs heads"),
        (((1, 8, 64), (1, 8, 24)), {"heads": 4}, "multiple of the head depth"),
        (((1, 2, 8, 16), (1, 2, 8, 8)), {}, "depth"),
        (((1, 2, 8, 16), (1, 2, 8, 16)), {"layout": "bshd"}, "unknown"),
        (((1, 2, 8, 16), (1, 2, 8, 16)), {"bias": np.zeros((8, 7))}, "bias has shape"),
        (((1, 2, 8, 16), (1, 2, 8, 16)), {"mask": np.zeros((8, 8))}, "boolean"),
        (((1, 2, 8, 16), (1, 2, 8, 16)), {"impl": "cudnn"}, "unknown"),
    ],
)
def test_bad_arguments_name_the_problem(shapes, kw, msg) -> None:  # type: ignore[no-untyped-def]
    q = np.zeros(shapes[0])
    k = np.zeros(shapes[1])
    kw = {"layout": "bhsd" if len(shapes[0]) == 4 else "interleaved", **kw}
    with pytest.raises(UsageError, match=msg):
        attention(q, k, k, **kw)


def test_shape_of_gqa_interleaved() -> None:
    s = attention_shape((2, 10, 8 * 64), (2, 12, 2 * 64), (2, 12, 2 * 64), "interleaved", 8)
    assert (s.batch, s.heads, s.kv_heads, s.q_len, s.kv_len, s.depth, s.group) == (2, 8, 2, 10, 12, 64, 4)
