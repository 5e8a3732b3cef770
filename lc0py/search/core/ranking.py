"""lc0's best-child order (``GetBestChildrenNoTemperature``) and the root statistics the stoppers
read (``PopulateCommonIterationStats``), compiled."""

from __future__ import annotations

import numpy as np

from lc0py.search.core.arrays import TABLEBASE, TreeArrays
from lc0py.search.core.jit import njit
from lc0py.search.core.numeric import fpu_value, prior_value
from lc0py.search.core.pick import node_q

F32 = np.float32


# columns of ``_edge_keys``: what lc0's comparison reads of an edge's child
K_RANK, K_N, K_TERM, K_TB, K_M, K_Q, K_PRIOR = 0, 1, 2, 3, 4, 5, 6


@njit
def _edge_keys(t: TreeArrays, node: int, draw_score: float, kids: np.ndarray) -> np.ndarray:
    """Per edge of ``node`` (child ``kids[e]``, −1 if none): rank (0 terminal loss, 1 tablebase
    loss, 2 other, 3 tablebase win, 4 terminal win), N, terminal, tablebase, M, Q (0 without
    visits) and prior, as float64 (exact for these int32/float32 values). Read once, so the
    comparisons below make no call that passes the tree (each cost ~14 atomic
    reference-count operations, and a ranking makes O(edges²) comparisons)."""
    ne = len(kids)
    keys = np.zeros((ne, 7), np.float64)
    e0 = t.edge0[node]
    for e in range(ne):
        c = kids[e]
        keys[e, K_PRIOR] = prior_value(t.ep[e0 + e])
        rank = 2
        if c >= 0:
            n = t.n[c]
            term = t.term[c]
            wl = t.wl[c]
            if n != 0 and term != 0 and wl != 0.0:
                if term == TABLEBASE:
                    rank = 1 if wl < 0.0 else 3
                else:
                    rank = 0 if wl < 0.0 else 4
            keys[e, K_N] = n
            keys[e, K_TERM] = term != 0
            keys[e, K_TB] = term == TABLEBASE
            keys[e, K_M] = t.m[c]
            if n > 0:
                keys[e, K_Q] = node_q(t, c, draw_score)
        keys[e, K_RANK] = rank
    return keys


@njit
def _better(keys: np.ndarray, a: int, b: int) -> bool:
    """True when edge ``a`` is preferred to edge ``b`` (lc0's ``GetBestChildrenNoTemperature``
    order: proven wins first, then by visits, Q and prior; among proven results the shortest
    win and the longest loss)."""
    ra = keys[a, K_RANK]
    rb = keys[b, K_RANK]
    if ra != rb:
        return ra > rb
    na = keys[a, K_N]
    nb = keys[b, K_N]
    if ra == 2 and na != 0 and nb != 0 and keys[a, K_TERM] != 0 and keys[b, K_TERM] != 0:
        if keys[a, K_TB] != keys[b, K_TB]:
            return keys[a, K_TB] < keys[b, K_TB]
        return keys[a, K_M] < keys[b, K_M]
    if ra == 2:
        if na != nb:
            return na > nb
        if keys[a, K_Q] != keys[b, K_Q]:
            return keys[a, K_Q] > keys[b, K_Q]
        return keys[a, K_PRIOR] > keys[b, K_PRIOR]
    if ra > 2:
        return keys[a, K_M] < keys[b, K_M]
    return keys[a, K_M] > keys[b, K_M]


@njit
def _children(t: TreeArrays, node: int) -> np.ndarray:
    """The child node of each edge of ``node`` (−1: none)."""
    kids = np.full(np.int32(t.nedges[node]), -1, np.int32)
    c = t.child[node]
    while c >= 0:
        kids[t.index[c]] = c
        c = t.sibling[c]
    return kids


@njit
def ranked_edges(t: TreeArrays, node: int, draw_score: float, allowed: np.ndarray) -> np.ndarray:
    """Edge indices of ``node`` best first (``allowed``: per edge 0/1, empty = all)."""
    ne = np.int32(t.nedges[node])
    keys = _edge_keys(t, node, draw_score, _children(t, node))
    order = np.empty(ne, np.int32)
    k = 0
    for e in range(ne):
        if len(allowed) > 0 and allowed[e] == 0:
            continue
        order[k] = e
        k += 1
    order = order[:k]
    # insertion sort: stable, a handful to a few hundred edges
    for i in range(1, k):
        x = order[i]
        j = i - 1
        while j >= 0 and _better(keys, x, order[j]):
            order[j + 1] = order[j]
            j -= 1
        order[j + 1] = x
    return order


@njit
def best_edge(t: TreeArrays, node: int, draw_score: float, allowed: np.ndarray) -> int:
    """``GetBestChildNoTemperature``: the preferred edge (−1 when not expanded / no visits)."""
    if t.n[node] == 0 or t.edge0[node] < 0:
        return -1
    ne = np.int32(t.nedges[node])
    keys = _edge_keys(t, node, draw_score, _children(t, node))
    best = -1
    for e in range(ne):
        if len(allowed) > 0 and allowed[e] == 0:
            continue
        if best < 0 or _better(keys, e, best):
            best = e
    return best


@njit
def root_stats(
    t: TreeArrays, root: int, fpu_abs: bool, fpu_val: float, draw_score: float, out: np.ndarray
) -> None:
    """``PopulateCommonIterationStats`` over all root edges: out = [edges, largest N,
    second largest N, win_found, losing edges, may_resign, mate depth (0: none)]."""
    ne = np.int32(t.nedges[root]) if t.edge0[root] >= 0 else 0
    largest = 0
    second = 0
    win = 0
    losing = 0
    may_resign = 1
    mate = 2147483647
    if t.n[root] > 0 and ne > 0:
        e0 = t.edge0[root]
        visited = F32(0.0)
        c = t.child[root]
        while c >= 0:
            if t.n[c] > 0:
                visited += prior_value(t.ep[e0 + t.index[c]])
            c = t.sibling[c]
        fpu = fpu_value(fpu_abs, fpu_val, node_q(t, root, -draw_score), visited)
        kids = np.full(ne, -1, np.int32)
        c = t.child[root]
        while c >= 0:
            kids[t.index[c]] = c
            c = t.sibling[c]
        for e in range(ne):
            x = kids[e]
            n = t.n[x] if x >= 0 else 0
            q = node_q(t, x, draw_score) if n > 0 else F32(fpu)
            if n > 0 and t.term[x] != 0 and t.wl[x] > 0.0:
                win = 1
            if n > 0 and t.term[x] != 0 and t.wl[x] < 0.0:
                losing += 1
            if n > 0 and t.term[x] != 0 and t.wl[x] == 1.0 and t.term[x] != TABLEBASE:
                md = np.int32(np.floor(np.float64(t.m[x]) + 0.5)) // 2 + 1
                if md < mate:
                    mate = md
            if n > 0 and q > F32(-0.98):
                may_resign = 0
            if n > largest:
                second = largest
                largest = n
            elif n > second:
                second = n
    out[0] = ne
    out[1] = largest
    out[2] = second
    out[3] = win
    out[4] = losing
    out[5] = may_resign
    out[6] = mate if mate != 2147483647 else 0
