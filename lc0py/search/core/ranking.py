"""lc0's best-child order (``GetBestChildrenNoTemperature``) and the root statistics the stoppers
read (``PopulateCommonIterationStats``), compiled."""

from __future__ import annotations

import numpy as np

from lc0py.search.core.arrays import TABLEBASE, TreeArrays
from lc0py.search.core.jit import njit
from lc0py.search.core.numeric import fpu_value, prior_value
from lc0py.search.core.pick import node_q

F32 = np.float32


@njit
def _rank(t: TreeArrays, c: int) -> int:
    """0 terminal loss, 1 tablebase loss, 2 other, 3 tablebase win, 4 terminal win."""
    if c < 0 or t.n[c] == 0 or t.term[c] == 0 or t.wl[c] == 0.0:
        return 2
    if t.term[c] == TABLEBASE:
        return 1 if t.wl[c] < 0.0 else 3
    return 0 if t.wl[c] < 0.0 else 4


@njit
def better(t: TreeArrays, node: int, a: int, ca: int, b: int, cb: int, draw_score: float) -> bool:
    """True when edge ``a`` (child ``ca``, −1 if none) is preferred to edge ``b``."""
    ra = _rank(t, ca)
    rb = _rank(t, cb)
    if ra != rb:
        return ra > rb
    na = t.n[ca] if ca >= 0 else 0
    nb = t.n[cb] if cb >= 0 else 0
    if ra == 2 and na != 0 and nb != 0 and t.term[ca] != 0 and t.term[cb] != 0:
        tba = t.term[ca] == TABLEBASE
        tbb = t.term[cb] == TABLEBASE
        if tba != tbb:
            return tba < tbb
        return t.m[ca] < t.m[cb]
    if ra == 2:
        if na != nb:
            return na > nb
        qa = node_q(t, ca, draw_score) if na > 0 else F32(0.0)
        qb = node_q(t, cb, draw_score) if nb > 0 else F32(0.0)
        if qa != qb:
            return qa > qb
        e0 = t.edge0[node]
        return prior_value(t.ep[e0 + a]) > prior_value(t.ep[e0 + b])
    ma = t.m[ca] if ca >= 0 else F32(0.0)
    mb = t.m[cb] if cb >= 0 else F32(0.0)
    if ra > 2:
        return ma < mb
    return ma > mb


@njit
def ranked_edges(t: TreeArrays, node: int, draw_score: float, allowed: np.ndarray) -> np.ndarray:
    """Edge indices of ``node`` best first (``allowed``: per edge 0/1, empty = all)."""
    ne = np.int32(t.nedges[node])
    kids = np.full(ne, -1, np.int32)
    c = t.child[node]
    while c >= 0:
        kids[t.index[c]] = c
        c = t.sibling[c]
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
        while j >= 0 and better(t, node, x, kids[x], order[j], kids[order[j]], draw_score):
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
    kids = np.full(ne, -1, np.int32)
    c = t.child[node]
    while c >= 0:
        kids[t.index[c]] = c
        c = t.sibling[c]
    best = -1
    for e in range(ne):
        if len(allowed) > 0 and allowed[e] == 0:
            continue
        if best < 0 or better(t, node, e, kids[e], best, kids[best], draw_score):
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
