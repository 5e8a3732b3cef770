"""A residual block's SE fc1, folded with its second convolution onto sums of the first one's output.

The SE pools the output ``y = conv2(h) + b`` of a block's second 3x3 convolution over the board.
That mean is linear in ``h``: tap ``t = (dr, df)`` of the same-padded convolution reads ``h`` at
``(r + dr - 1, f + df - 1)``, so summed over the output squares it sees the whole board of ``h``
less the rank (and/or file) its offset pushes off the board, plus their corner. Those are sums
the fused step of the FIRST convolution can take while it holds ``h`` in registers: per 4x4 tile
of the board and channel, its quadrant, its outer rank, its outer file and its outer corner
(``STATS`` = 16 numbers per channel). Then

    mean(y)[o] = b[o] + (1/64) sum_{t, i} W[o, i, t] S_t[i],   S_t = coef[t] . stats
    fc1 pre-activation = W1 mean(y) + b1 = W_f . stats + b_f,
    W_f[j, s, i] = (1/64) sum_o W1[j, o] sum_t W[o, i, t] coef[t, s],   b_f = b1 + W1 b

so fc1 becomes one small GEMM over ``[B, 16C]`` sums, computed before the second convolution's
fused step, which then reads its position's gates instead of pooling and running fc1 and fc2
behind four barriers (docs/performance.md §10, log of 2026-11-27).
"""

from __future__ import annotations

import numpy as np

from lc0py.weights.network import Dense
from lc0py.weights.residual import Conv

#: per-tile sums of a channel: the tile's 4x4 quadrant, its rank on the board's edge, its file on
#: the board's edge, and the square they share; tiles ``tt = ty * 2 + tx`` (rank half, file half)
STATS_PER_TILE = ("quadrant", "outer_rank", "outer_file", "outer_corner")
STATS = 4 * len(STATS_PER_TILE)


def stat_masks() -> np.ndarray:
    """``[16, 64]``: which squares (``rank * 8 + file``) each stat sums, row ``tt * 4 + stat``."""
    masks = np.zeros((STATS, 8, 8))
    for ty in range(2):
        for tx in range(2):
            row = (ty * 2 + tx) * 4
            ranks, files = slice(4 * ty, 4 * ty + 4), slice(4 * tx, 4 * tx + 4)
            edge_rank, edge_file = 7 * ty, 7 * tx
            masks[row, ranks, files] = 1
            masks[row + 1, edge_rank, files] = 1
            masks[row + 2, ranks, edge_file] = 1
            masks[row + 3, edge_rank, edge_file] = 1
    return masks.reshape(STATS, 64)


def tap_coefficients() -> np.ndarray:
    """``[9, 16]``: ``S_t = coef[t] . stats``, the sum of the input squares tap ``t = dr * 3 + df``
    of a same-padded 3x3 convolution reads over all output squares, in the stats' terms (exact)."""
    masks = stat_masks()
    coef = np.zeros((9, STATS))
    for dr in range(3):
        for df in range(3):
            reach = np.zeros((8, 8))
            r0, f0 = dr - 1, df - 1
            reach[max(0, r0):min(8, 8 + r0), max(0, f0):min(8, 8 + f0)] = 1
            sol, *_ = np.linalg.lstsq(masks.T, reach.reshape(64), rcond=None)
            assert np.allclose(masks.T @ sol, reach.reshape(64)), (dr, df)
            coef[dr * 3 + df] = sol
    return coef


def fold_se_fc1(conv2: Conv, fc1: Dense) -> tuple[np.ndarray, np.ndarray]:
    """``(W_f [S, 16C], b_f [S])`` in float64: fc1's pre-activation from the sums of ``h`` (row
    ``s * C + i`` of a position's ``[16, C]`` stats), for the block whose second convolution is
    ``conv2`` (``[C, C, 3, 3]``, bias folded in) and whose SE fc1 is ``fc1`` (``[S, C]``)."""
    w = np.asarray(conv2.w, np.float64)
    cout, cin = w.shape[0], w.shape[1]
    if w.shape[2:] != (3, 3):
        raise ValueError(f"fold_se_fc1: a 3x3 convolution, not {w.shape}")
    w1 = np.asarray(fc1.w, np.float64)
    per_stat = np.einsum("oit,ts->ois", w.reshape(cout, cin, 9), tap_coefficients())  # [C, C, 16]
    wf = np.einsum("jo,ois->jsi", w1, per_stat) / 64.0  # [S, 16, C]
    b1 = np.zeros(w1.shape[0]) if fc1.b is None else np.asarray(fc1.b, np.float64)
    bf = b1 + w1 @ np.asarray(conv2.b, np.float64)
    return wf.reshape(w1.shape[0], STATS * cin), bf


def tile_stats(h: np.ndarray) -> np.ndarray:
    """The 16 sums of each channel of ``h [B, C, 8, 8]``: ``[B, 16, C]`` (what the fused step of
    a block's first convolution writes)."""
    b, c = h.shape[0], h.shape[1]
    return np.einsum("sq,bcq->bsc", stat_masks(), h.reshape(b, c, 64))
