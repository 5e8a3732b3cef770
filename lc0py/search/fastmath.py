"""lc0's fast float approximations (``src/utils/fastmath.h``, docs/search.md §7).

Only needed where lc0py wants bit-exact agreement with lc0 (policy priors with ``fast_math``,
the WDL_mu score rewrite). Scalar versions use float32 via numpy; array versions vectorise.
"""

from __future__ import annotations

import numpy as np

_F = np.float32


def fast_log2(a: float) -> float:
    """``log2(a)`` for ``a > 0``, absolute error <= 0.0077."""
    bits = int(np.array(a, dtype=np.float32).view(np.int32))
    e = ((bits >> 23) & 0xFF) - 127
    f = np.array((bits & 0x7FFFFF) | 0x3F800000, dtype=np.int32).view(np.float32) - _F(1.0)
    return float(_F(e) + f * (_F(1.3465552) - _F(0.34655523) * f))


def fast_log(a: float) -> float:
    return float(_F(0.6931471805599453) * _F(fast_log2(a)))


def fast_exp2_array(a: np.ndarray) -> np.ndarray:
    """``2**a`` elementwise in float32 (lc0's FastExp2)."""
    a = np.asarray(a, dtype=np.float32)
    n = np.where(a < 0, (a - _F(1)).astype(np.int32), a.astype(np.int32))
    f = a - n.astype(np.float32)
    base = f * (_F(0.6602339) + _F(0.33976606) * f) + _F(1.0)
    bits = base.view(np.int32) + (np.clip(n, -126, 127).astype(np.int32) << 23)
    out = bits.view(np.float32).copy()
    out[a < -126] = 0.0
    return out


def fast_exp_array(a: np.ndarray) -> np.ndarray:
    """``exp(a)`` elementwise in float32 (lc0's FastExp)."""
    return fast_exp2_array(np.asarray(a, dtype=np.float32) * _F(1.442695040))


def fast_exp(a: float) -> float:
    return float(fast_exp_array(np.array([a], dtype=np.float32))[0])


def fast_logistic(a: float) -> float:
    if a > 20:
        return 1.0
    if a < -20:
        return 0.0
    return float(_F(1.0) / (_F(1.0) + _F(fast_exp(-a))))
