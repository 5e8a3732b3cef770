"""lc0py.backends.base: the value head's raw output to (W, D, L)."""

from __future__ import annotations

import numpy as np

from lc0py.backends.base import wdl_from_value


def test_wdl_logits_softmax_matches_float64() -> None:
    rng = np.random.default_rng()
    z = (rng.standard_normal((257, 3)) * rng.choice([0.1, 5.0, 80.0], (257, 1))).astype(np.float32)
    got = wdl_from_value(z)
    zz = z.astype(np.float64)
    want = np.exp(zz - zz.max(axis=1, keepdims=True))
    want /= want.sum(axis=1, keepdims=True)
    assert got.dtype == np.float32 and got.shape == (257, 3)
    assert np.isfinite(got).all()  # logits of 80 would overflow exp without the max shift
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


def test_wdl_from_scalar_value_is_tanh_split() -> None:
    z = np.array([[0.0], [1.5], [-30.0]], np.float32)
    q = np.tanh(z[:, 0].astype(np.float64))
    want = np.stack([(1 + q) / 2, np.zeros(3), (1 - q) / 2], axis=1)
    np.testing.assert_allclose(wdl_from_value(z), want, rtol=1e-6, atol=1e-7)


def test_few_rows_take_the_scalar_path_and_agree_with_numpy() -> None:
    """Batches of up to ``WDL_SCALAR_ROWS`` positions are computed on Python floats (the GPU's
    batch-1 host path); they agree with the numpy path on the same rows, for both head kinds."""
    from lc0py.backends.base import WDL_SCALAR_ROWS

    rng = np.random.default_rng()
    for cols in (3, 1):
        many = (rng.standard_normal((WDL_SCALAR_ROWS + 7, cols)) * 4).astype(np.float32)
        big = wdl_from_value(many)
        for n in range(1, WDL_SCALAR_ROWS + 1):
            small = wdl_from_value(many[:n])
            assert small.dtype == np.float32 and small.shape == (n, 3)
            np.testing.assert_allclose(small, big[:n], rtol=1e-5, atol=1e-7)
            np.testing.assert_allclose(small.sum(axis=1), 1.0, rtol=1e-6)
