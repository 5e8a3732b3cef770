"""lc0's WDL rescaling (``WDLRescale`` in ``src/search/classic/search.cc``): contempt and draw-rate
sharpening as a shift and stretch of the logistic WDL model.

A value ``v = W − L`` with draw ``d`` is read as a logistic distribution with mean ``mu`` and
scale ``s`` (``a = ln(1/L − 1)``, ``b = ln(1/W − 1)``, ``mu = (a − b)/(a + b)``, ``s = 2/(a + b)``,
lc0's fast log); the rescaled one has scale ``s · ratio`` and mean ``mu + sign · s² · diff``.
``sign`` is +1 when the values are from the side the contempt favours. Forward (search): ``s``
is first capped at ``max_s``. ``invert`` (reporting) undoes a rescale: ``1/ratio``, ``−diff``.
Extreme WDLs (any part within 1e-4 of 0 or 1) are left as they are. float32 as in lc0.
"""

from __future__ import annotations

import numpy as np

from lc0py.search.fastmath import fast_log, fast_logistic

_F = np.float32
_EPS = 0.0001


def wdl_rescale(
    v: float,
    d: float,
    ratio: float = 1.0,
    diff: float = 0.0,
    sign: float = 1.0,
    invert: bool = False,
    max_s: float = 1.4,
) -> tuple[float, float, float]:
    """``(mu_new, v', d')``; ``mu_new`` is 0 (and ``v, d`` unchanged) for extreme WDLs."""
    if invert:
        diff = -diff
        ratio = float(_F(1.0) / _F(ratio))
    w = (1.0 + v - d) / 2.0
    lo = (1.0 - v - d) / 2.0
    if not all(_EPS < x < 1.0 - _EPS for x in (w, d, lo)):
        return 0.0, v, d
    a = fast_log(float(_F(1.0) / _F(lo) - _F(1.0)))
    b = fast_log(float(_F(1.0) / _F(w) - _F(1.0)))
    if a + b == 0.0:
        return 0.0, v, d
    s = float(_F(2.0) / _F(a + b))
    if not invert:
        s = min(max_s, s)
    mu = float(_F(a - b) / _F(a + b))
    s_new = float(_F(s) * _F(ratio))
    if invert:
        s, s_new = s_new, s
        s = min(max_s, s)
    mu_new = float(_F(mu) + _F(sign) * _F(s) * _F(s) * _F(diff)) if diff else mu
    w_new = fast_logistic(float(_F(-1.0 + mu_new) / _F(s_new)))
    l_new = fast_logistic(float(_F(-1.0 - mu_new) / _F(s_new)))
    return mu_new, float(_F(w_new) - _F(l_new)), max(0.0, float(_F(1.0) - _F(w_new) - _F(l_new)))
