"""The lines ``info`` reports, compiled: root children in lc0's order and each one's principal
variation as python-chess moves (``Search.info``, after every batch that changes the best move
or the depths).

Walked in Python (``best_edge`` and ``child_at`` through numba's dispatcher at every ply, each
matching the types of the tree's 18 arrays, plus a python-chess ``push`` a move) one info cost
0.5-1 ms of the search thread: on a GPU that is a batch's worth of device time. One call here
does the walk, the replay of the positions (``board.play``) and lc0py's castling spelling
(``board.to_chess_move``'s rule: king-takes-own-rook becomes ``e1g1``/``e1c1`` outside Chess960).
"""

from __future__ import annotations

import numpy as np

from lc0py.chess.core import board as B
from lc0py.search.core.arrays import TreeArrays, child_at
from lc0py.search.core.jit import njit
from lc0py.search.core.ranking import best_edge, ranked_edges

MAX_PV = 256  # plies of one line at most (as ``Search._pv`` stopped)


@njit
def ranked_children(t: TreeArrays, root: int, draw_score: float, allowed: np.ndarray, out: np.ndarray) -> int:
    """Root children that have nodes, best first (``ranked_edges``' order), into ``out``;
    returns how many (``out`` holds at least ``MAX_MOVES``)."""
    if t.edge0[root] < 0:
        return 0
    order = ranked_edges(t, root, draw_score, allowed)
    k = 0
    for i in range(len(order)):
        c = child_at(t, root, order[i])
        if c >= 0:
            out[k] = c
            k += 1
    return k


@njit
def _chess_move(pos: np.ndarray, move: int, chess960: bool) -> int:
    """``move`` as python-chess writes it (from | to << 6 | promotion piece type << 12):
    outside Chess960 a king taking its own rook is the king's two-square move."""
    frm, to, promo = move & 63, (move >> 6) & 63, move >> 12
    own = pos[B.W_COLOUR + np.int64(pos[B.W_STM])]
    if not chess960:
        f, tt = np.uint64(1) << np.uint64(frm), np.uint64(1) << np.uint64(to)
        if (pos[B.W_PIECES + B.KING_T] & own & f) != 0 and (own & tt) != 0:
            to = (to & 56) | (6 if to > frm else 2)
    return frm | (to << 6) | ((promo + 1 if promo else 0) << 12)


@njit
def pv_moves(
    t: TreeArrays,
    first: int,
    draw_even: float,
    draw_odd: float,
    root_pos: np.ndarray,
    chess960: bool,
    scratch: np.ndarray,
    out: np.ndarray,
) -> int:
    """The line of root child ``first`` (``Search._pv``'s rule: best children, lc0's order at
    each node's depth, while they have visits, then the best reply by prior), as python-chess
    move codes in ``out`` (``_chess_move``); returns its length. ``root_pos``: the root's core
    position; ``scratch``: uint64 ``[2, POS_WORDS]``."""
    none = np.zeros(0, np.uint8)
    parent = t.parent[first]
    move = np.int64(t.emove[t.edge0[parent] + t.index[first]])
    out[0] = _chess_move(root_pos, move, chess960)
    B.play(root_pos, move, scratch[0])
    k = 1
    cur = 0
    node = first
    depth = 1
    while t.n[node] > 0 and t.edge0[node] >= 0 and k < MAX_PV:
        e = best_edge(t, node, draw_odd if depth % 2 else draw_even, none)
        if e < 0:
            if t.nedges[node] > 0 and t.term[node] == 0:
                out[k] = _chess_move(scratch[cur], np.int64(t.emove[t.edge0[node]]), chess960)
                k += 1
            break
        move = np.int64(t.emove[t.edge0[node] + e])
        out[k] = _chess_move(scratch[cur], move, chess960)
        k += 1
        c = child_at(t, node, e)
        if c < 0 or t.n[c] == 0:
            break
        B.play(scratch[cur], move, scratch[1 - cur])
        cur = 1 - cur
        node = c
        depth += 1
    return k
