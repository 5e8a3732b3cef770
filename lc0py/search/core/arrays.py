"""The search tree as flat arrays (struct of arrays), growable, with lc0's node fields.

Nodes (``int32`` ids, the root of the current search is ``Tree.root``):

======== ======= =========================================================================
field    dtype   meaning (lc0's ``Node``)
======== ======= =========================================================================
wl       float64 mean W−L from the view of the player who moved *into* the node
d, m     float32 mean draw probability and plies left
n        int32   completed visits
nif      int32   visits in flight
parent   int32   parent id (−1: none)
child    int32   first child node; the children form a list ordered by edge index
sibling  int32   next child of the same parent (higher edge index)
edge0    int32   first edge in the edge pool (−1: not expanded)
nedges   uint8   number of edges (legal moves; at most 218)
index    uint8   this node's edge index in the parent
term     uint8   0 not terminal, 1 end of game / proven, 2 tablebase, 3 two-fold draw
lower,   int8    lc0's bounds (−1 loss, 0 draw, 1 win) for StickyEndgames
upper
v        float32 the network's value of this node (verbose stats; NaN until evaluated)
======== ======= =========================================================================

Edges: ``emove`` (uint16 packed move) and ``ep`` (uint16, lc0's 16-bit prior code), sorted by
descending prior once evaluated. 49 bytes a node + 4 bytes an edge.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from lc0py.search.core.jit import njit

NODE_FIELDS: tuple[tuple[str, type], ...] = (
    ("wl", np.float64),
    ("d", np.float32),
    ("m", np.float32),
    ("n", np.int32),
    ("nif", np.int32),
    ("parent", np.int32),
    ("child", np.int32),
    ("sibling", np.int32),
    ("edge0", np.int32),
    ("nedges", np.uint8),
    ("index", np.uint8),
    ("term", np.uint8),
    ("lower", np.int8),
    ("upper", np.int8),
    ("v", np.float32),
)
NODE_BYTES = sum(np.dtype(t).itemsize for _, t in NODE_FIELDS)
EDGE_BYTES = 4

NOT_TERMINAL = 0
END_OF_GAME = 1
TABLEBASE = 2
TWO_FOLD = 3

# meta[...] slots
META_NODES = 0  # nodes in use
META_EDGES = 1  # edges in use


class TreeArrays(NamedTuple):
    """Everything compiled code needs of the tree, passed as one argument."""

    wl: np.ndarray
    d: np.ndarray
    m: np.ndarray
    n: np.ndarray
    nif: np.ndarray
    parent: np.ndarray
    child: np.ndarray
    sibling: np.ndarray
    edge0: np.ndarray
    nedges: np.ndarray
    index: np.ndarray  # type: ignore[assignment]  # shadows tuple.index (read by name in compiled code)
    term: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    v: np.ndarray
    emove: np.ndarray
    ep: np.ndarray
    meta: np.ndarray


def allocate(node_capacity: int, edge_capacity: int) -> TreeArrays:
    nodes: list[np.ndarray] = [np.zeros(node_capacity, dtype=t) for _, t in NODE_FIELDS]
    edges = [np.zeros(edge_capacity, np.uint16), np.zeros(edge_capacity, np.uint16)]
    return TreeArrays._make([*nodes, *edges, np.zeros(4, np.int64)])


def grow(t: TreeArrays, node_capacity: int, edge_capacity: int) -> TreeArrays:
    """Copies of the arrays with at least the given capacities (contents kept)."""
    out: list[np.ndarray] = []
    for name, _ in NODE_FIELDS:
        a = getattr(t, name)
        if len(a) < node_capacity:
            b = np.zeros(node_capacity, a.dtype)
            b[: len(a)] = a
            a = b
        out.append(a)
    emove, ep = t.emove, t.ep
    if len(emove) < edge_capacity:
        emove = np.zeros(edge_capacity, np.uint16)
        emove[: len(t.emove)] = t.emove
        ep = np.zeros(edge_capacity, np.uint16)
        ep[: len(t.ep)] = t.ep
    return TreeArrays._make([*out, emove, ep, t.meta])


def capacity_bytes(t: TreeArrays) -> int:
    return len(t.n) * NODE_BYTES + len(t.emove) * EDGE_BYTES


def used_bytes(t: TreeArrays) -> int:
    return int(t.meta[META_NODES]) * NODE_BYTES + int(t.meta[META_EDGES]) * EDGE_BYTES


@njit
def new_node(t: TreeArrays, parent: int, index: int) -> int:
    """A fresh node (caller checked the capacity)."""
    i = t.meta[META_NODES]
    t.meta[META_NODES] = i + 1
    t.wl[i] = 0.0
    t.d[i] = 0.0
    t.m[i] = 0.0
    t.n[i] = 0
    t.nif[i] = 0
    t.parent[i] = parent
    t.child[i] = -1
    t.sibling[i] = -1
    t.edge0[i] = -1
    t.nedges[i] = 0
    t.index[i] = index
    t.term[i] = NOT_TERMINAL
    t.lower[i] = -1
    t.upper[i] = 1
    t.v[i] = np.nan
    return i


@njit
def child_at(t: TreeArrays, node: int, idx: int) -> int:
    """The child node of edge ``idx`` (−1 if none)."""
    c = t.child[node]
    while c >= 0:
        k = t.index[c]
        if k == idx:
            return c
        if k > idx:
            return -1
        c = t.sibling[c]
    return -1


@njit
def spawn_child(t: TreeArrays, node: int, idx: int) -> int:
    """``GetOrSpawnNode``: the child of edge ``idx``, created in index order if missing."""
    prev = -1
    c = t.child[node]
    while c >= 0:
        k = t.index[c]
        if k == idx:
            return c
        if k > idx:
            break
        prev = c
        c = t.sibling[c]
    x = new_node(t, node, idx)
    t.sibling[x] = c
    if prev < 0:
        t.child[node] = x
    else:
        t.sibling[prev] = x
    return x


@njit
def reserve_edges(t: TreeArrays, count: int) -> int:
    e = t.meta[META_EDGES]
    t.meta[META_EDGES] = e + count
    return e


@njit
def copy_subtree(src: TreeArrays, root: int, dst: TreeArrays) -> tuple[np.ndarray, np.ndarray]:
    """Copy the subtree of ``root`` into the empty ``dst`` (tree reuse: everything else is
    dropped, as lc0 frees the other subtrees); the new root is node 0. Returns the ids
    (old, new) of every copied node."""
    new_root = new_node(dst, -1, 0)
    order_src = np.empty(src.meta[META_NODES], np.int32)
    order_dst = np.empty(src.meta[META_NODES], np.int32)
    order_src[0] = root
    order_dst[0] = new_root
    count = 1
    k = 0
    while k < count:
        s = order_src[k]
        x = order_dst[k]
        k += 1
        dst.wl[x] = src.wl[s]
        dst.d[x] = src.d[s]
        dst.m[x] = src.m[s]
        dst.n[x] = src.n[s]
        dst.nif[x] = 0
        dst.term[x] = src.term[s]
        dst.lower[x] = src.lower[s]
        dst.upper[x] = src.upper[s]
        dst.v[x] = src.v[s]
        ne = src.nedges[s]
        if src.edge0[s] >= 0:
            e = reserve_edges(dst, ne)
            dst.edge0[x] = e
            dst.nedges[x] = ne
            e0 = src.edge0[s]
            for j in range(ne):
                dst.emove[e + j] = src.emove[e0 + j]
                dst.ep[e + j] = src.ep[e0 + j]
        prev = -1
        c = src.child[s]
        while c >= 0:
            y = new_node(dst, x, src.index[c])
            if prev < 0:
                dst.child[x] = y
            else:
                dst.sibling[prev] = y
            prev = y
            order_src[count] = c
            order_dst[count] = y
            count += 1
            c = src.sibling[c]
    return order_src[:count], order_dst[:count]


@njit
def subtree_size(t: TreeArrays, root: int) -> tuple[int, int]:
    """(nodes, edges) of the subtree of ``root``."""
    nodes = 0
    edges = 0
    todo = np.empty(t.meta[META_NODES], np.int32)
    todo[0] = root
    top = 1
    while top > 0:
        top -= 1
        x = todo[top]
        nodes += 1
        if t.edge0[x] >= 0:
            edges += t.nedges[x]
        c = t.child[x]
        while c >= 0:
            todo[top] = c
            top += 1
            c = t.sibling[c]
    return nodes, edges


@njit
def make_not_terminal(t: TreeArrays, x: int) -> None:
    """lc0's ``Node::MakeNotTerminal``: an expanded node counts its own visit (with its terminal
    value standing in for the network's) plus its children's, with their values; a node without
    edges has no visit. Bounds are kept, as in lc0."""
    t.term[x] = NOT_TERMINAL
    t.n[x] = 0
    if t.edge0[x] < 0:
        return
    n = 1
    wl = t.wl[x]
    d = t.d[x]
    c = t.child[x]
    while c >= 0:
        cn = t.n[c]
        if cn > 0:
            n += cn
            wl += np.float64(-np.float32(t.wl[c]) * np.float32(cn))  # float GetWL × n, into a double
            d += t.d[c] * np.float32(cn)
        c = t.sibling[c]
    t.n[x] = n
    t.wl[x] = wl / n
    t.d[x] = d / np.float32(n)
