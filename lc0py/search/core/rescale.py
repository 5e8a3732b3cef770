"""lc0's WDL rescaling of network values before backup (contempt and draw-rate sharpening),
compiled: ``FetchSingleNodeResult`` in lc0's ``src/search/classic/search.cc`` rescales every
evaluation it backs up -- a network result or an NN-cache hit, never a terminal -- with
``WDLRescale`` (the float32 formula of :mod:`lc0py.search.wdl_rescale`, docs/search.md §12).

The value rescaled is the node's (from the side that moved into it); ``sign`` is +1 when that
side is the one the contempt favours: ``root_stm XOR (depth odd)`` with lc0's depths (the root
is 1), ``root_stm`` being whether the contempt favours the root's side to move. The node's
stored network value (``v``, VerboseMoveStats' ``V``) and the NN cache keep the raw values.
"""

from __future__ import annotations

import numpy as np

from lc0py.search.core.jit import njit
from lc0py.search.core.numeric import fast_exp, fast_log

F32 = np.float32

# slots of the search's parameter vector (pick.P_*) read here
P_RESCALE_RATIO, P_RESCALE_DIFF, P_RESCALE_MAX_S, P_RESCALE_ROOT_STM = 20, 21, 22, 23
P_TB_PIECES = 24  # in-tree tablebase probes: the tables' most pieces, 0 = none (core/leaves.py)

_EPS = F32(0.0001)


@njit
def fast_logistic(a: float) -> float:
    a = F32(a)
    if a > F32(20.0):
        return F32(1.0)
    if a < F32(-20.0):
        return F32(0.0)
    return F32(1.0) / (F32(1.0) + F32(fast_exp(-a)))


@njit
def wdl_rescale(
    v: float, d: float, ratio: float, diff: float, sign: float, max_s: float
) -> tuple[float, float]:
    """lc0's ``WDLRescale`` forward (search side): ``(v', d')``; extreme WDLs unchanged."""
    v, d = F32(v), F32(d)
    w = (F32(1.0) + v - d) / F32(2.0)
    lo = (F32(1.0) - v - d) / F32(2.0)
    one = F32(1.0)
    if not (w > _EPS and d > _EPS and lo > _EPS and w < one - _EPS and d < one - _EPS and lo < one - _EPS):
        return v, d
    a = F32(fast_log(one / lo - one))
    b = F32(fast_log(one / w - one))
    if a + b == F32(0.0):
        return v, d
    s = min(F32(max_s), F32(2.0) / (a + b))
    mu = (a - b) / (a + b)
    s_new = s * F32(ratio)
    mu_new = mu + F32(sign) * s * s * F32(diff)
    w_new = F32(fast_logistic((F32(-1.0) + mu_new) / s_new))
    l_new = F32(fast_logistic((F32(-1.0) - mu_new) / s_new))
    return w_new - l_new, max(F32(0.0), one - w_new - l_new)


@njit
def rescale_leaf(prm: np.ndarray, depth: int, v: float, d: float) -> tuple[float, float]:
    """The node value ``v`` and draw ``d`` of a leaf at ``depth`` as the search backs them up."""
    ratio, diff = prm[P_RESCALE_RATIO], prm[P_RESCALE_DIFF]
    if ratio == 1.0 and diff == 0.0:
        return F32(v), F32(d)
    root_stm = prm[P_RESCALE_ROOT_STM] != 0.0
    sign = 1.0 if root_stm != (depth % 2 == 1) else -1.0
    return wdl_rescale(v, d, ratio, diff, sign, prm[P_RESCALE_MAX_S])
