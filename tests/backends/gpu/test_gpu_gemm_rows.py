"""On a GPU: ``gemm_rows`` (kernels/gemm_rows.hip) against float64 numpy, at T82's shapes.

The four GEMMs of a T82 layer at one position (64 rows: QKV 768 -> 2304 with 32-column tiles,
out-projection 768 -> 768 with alpha, FFN1 768 -> 1024 with bias and relu², FFN2 1024 -> 768),
a head's one-row GEMM, rows past one 64-row block, and a launch under the dependent launch right
after another kernel that writes its input (the wait must hold it). Marked ``gpu``.
"""

from __future__ import annotations

import numpy as np
import pytest

from lc0py.model.activations import activation
from tests.backends.conformance import relative_error

pytestmark = pytest.mark.gpu

ACT_NONE, ACT_RELU2 = 3, 8

#: (m, n, k, alpha, act, bias)
SHAPES = [
    (64, 2304, 768, 1.0, ACT_NONE, False),
    (64, 768, 768, 0.7, ACT_NONE, False),
    (64, 1024, 768, 1.0, ACT_RELU2, True),
    (64, 768, 1024, 1.3, ACT_NONE, False),
    (1, 128, 64, 1.0, ACT_NONE, True),
    (200, 96, 136, 1.0, ACT_RELU2, True),
]


@pytest.mark.parametrize(("m", "n", "k", "alpha", "act", "has_bias"), SHAPES)
def test_gemm_rows_matches_numpy(  # type: ignore[no-untyped-def]
    cuda_platform, m: int, n: int, k: int, alpha: float, act: int, has_bias: bool
) -> None:
    from lc0py.backends.gpu.ops import GpuOps
    from lc0py.gpu.compile_cache import KernelCache

    p = cuda_platform
    p.dependent_launch = p.dependent_launch_problem() is None
    ops = GpuOps(p, KernelCache(p), True, 1)
    ops.enable_gemm_rows(8)
    rng = np.random.default_rng()
    x = (rng.standard_normal((m, k)) + 0.1).astype(np.float16)
    w = (rng.standard_normal((n, k)) / np.sqrt(k)).astype(np.float16)
    bias = (0.5 * rng.standard_normal(n)).astype(np.float16)
    ptrs = [p.alloc(a.nbytes) for a in (x, w, bias)]
    out = p.alloc(m * n * 2)
    try:
        for ptr, a in zip(ptrs, (x, w, bias), strict=True):
            p.copy_h2d(ptr, a, a.nbytes, ops.main)
        p.memset(out, 0xFF, m * n * 2, ops.main)  # NaN-poisoned
        # the input written by a kernel just before (bias_act with bias 0: x unchanged), so the
        # GEMM's wait on it is exercised under a dependent launch
        zero = p.alloc(k * 2)
        p.memset(zero, 0, k * 2, ops.main)
        ops.bias_act(ptrs[0], zero, m, k, ACT_NONE)
        ops.gemm_rows(ptrs[0], k, ptrs[1], ptrs[2] if has_bias else 0, out, n, m, n, k, alpha, act)
        got = np.empty((m, n), np.float16)
        p.copy_d2h(got, out, got.nbytes, ops.main)
        p.synchronize(ops.main)
        p.free(zero)
    finally:
        for ptr in (*ptrs, out):
            p.free(ptr)
        ops.close()
    want = activation(act, alpha * (x.astype(np.float64) @ w.astype(np.float64).T)
                      + (bias.astype(np.float64) if has_bias else 0.0))
    assert np.isfinite(got).all()
    err = relative_error(got.astype(np.float64), want)
    assert err <= 1e-2, f"m={m} n={n} k={k}: {err:.2e}"
