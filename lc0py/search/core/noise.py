"""Dirichlet noise on the root's priors, compiled (lc0's ``ApplyDirichletNoise`` in
``src/search/classic/search.cc``, called from ``SearchWorker::FetchSingleNodeResult``).

lc0 adds the noise when the root's evaluation arrives (from the network or the NN cache) in a
search: the priors are written in move-generation order, each edge ``i`` gets
``P·(1 − ε) + ε·ηᵢ/Σηⱼ`` with ``ηᵢ ~ Gamma(α, 1)`` (stored again as a 16-bit prior), and then the
edges are sorted. A root reused from the previous move is already expanded and gets no new noise.

Here the edges were already sorted by their clean priors when the hook runs, so they are first put
back into generation order (no child exists yet), then noised and sorted again: the same order
lc0's sort gives, ties included. The Gamma samples are drawn beforehand by the controller (one per
possible move, the first ``n`` used), so a seeded search is reproducible.
"""

from __future__ import annotations

import numpy as np

from lc0py.chess.core import board as B
from lc0py.search.core.arrays import TreeArrays
from lc0py.search.core.jit import njit
from lc0py.search.core.leaves import SORT_STACK, Positions, sort_edges
from lc0py.search.core.numeric import prior_code, prior_value

F32 = np.float32
FLT_MIN = F32(1.1754943508222875e-38)  # std::numeric_limits<float>::min()
SAMPLES = B.MAX_MOVES  # Gamma samples the controller draws (at least the most legal moves)


@njit
def apply_root_noise(t: TreeArrays, root: int, pos: Positions, noise: np.ndarray, eps: float) -> bool:
    """Noise the freshly evaluated ``root``'s priors and re-sort its edges. ``noise``: Gamma(α, 1)
    samples (empty: noise off); ``pos``: the game, the root is its last row. Returns whether
    the priors changed (False when off, not expanded, or the samples sum to ~0, as lc0)."""
    e0 = t.edge0[root]
    if len(noise) == 0 or eps == 0.0 or e0 < 0 or t.child[root] >= 0:
        return False
    n = np.int32(t.nedges[root])
    total = F32(0.0)
    for j in range(n):
        total += F32(noise[j])
    if total < FLT_MIN:
        return False
    moves = np.empty(B.MAX_MOVES, np.uint16)
    row = pos.meta[0] - 1
    count = B.gen_legal(pos.hist[row], moves)
    if count != n:  # cannot happen: the root's edges are its legal moves
        return False
    codes = np.empty(n, np.uint16)
    for j in range(n):
        codes[j] = 0
        for k in range(n):
            if t.emove[e0 + k] == moves[j]:
                codes[j] = t.ep[e0 + k]
                break
    e = F32(eps)
    keep = F32(1.0) - e
    for j in range(n):
        p = prior_value(codes[j]) * keep + e * F32(noise[j]) / total
        t.emove[e0 + j] = moves[j]
        t.ep[e0 + j] = prior_code(p)
    sort_edges(t, root, np.empty(B.MAX_MOVES, np.uint32), np.empty((3, SORT_STACK), np.int64))
    return True
