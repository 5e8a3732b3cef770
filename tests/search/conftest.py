"""Shared helpers: a search over the random backend and hand-made trees on the flat arrays."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from lc0py.backends.random_backend import RandomBackend
from lc0py.search.core import arrays as A
from lc0py.search.core.nncache import NNCache
from lc0py.search.core.numeric import prior_code
from lc0py.search.core.pick import pick_nodes, pick_workspace
from lc0py.search.core.tree import NodeTree, NodeView
from lc0py.search.params import SearchParams
from lc0py.search.search import Search, SearchCallbacks, SearchLimits
from lc0py.search.tablebase import TablebaseProbe
from lc0py.search.worker import params_array


def make_search(
    fen: str | None = None,
    moves: Sequence[str] = (),
    params: SearchParams | None = None,
    limits: SearchLimits | None = None,
    cache: NNCache | None = None,
    tree: NodeTree | None = None,
    backend: RandomBackend | None = None,
    callbacks: SearchCallbacks | None = None,
    tablebase: TablebaseProbe | None = None,
) -> Search:
    if tree is None:
        tree = NodeTree()
        tree.reset_to_position(fen, moves)
    return Search(
        tree,
        backend or RandomBackend(),
        params or SearchParams(overlap=False),
        limits or SearchLimits(nodes=100, smart_pruning=False),
        cache if cache is not None else NNCache(10000),
        callbacks,
        tablebase=tablebase,
    )


def hand_node(priors: Sequence[float], stats: Sequence[tuple[int, int, float]], wl: float = 0.0) -> NodeView:
    """A root with edges of ``priors`` (descending, stored as lc0's 16-bit codes) and children
    ``(n, nif, wl)`` for a prefix. Root ``n`` = 1 + sum of child visits; moves are placeholders."""
    tree = NodeTree()
    t = tree.arrays
    root = tree.root_id
    e0 = int(A.reserve_edges(t, len(priors)))
    t.edge0[root] = e0
    t.nedges[root] = len(priors)
    for i, p in enumerate(priors):
        t.emove[e0 + i] = i | (i + 8) << 6
        t.ep[e0 + i] = prior_code(p)
    total = 1
    for i, (n, nif, cwl) in enumerate(stats):
        c = int(A.spawn_child(t, root, i))
        t.n[c], t.nif[c], t.wl[c] = n, nif, cwl
        total += n
    t.n[root] = total
    t.wl[root] = wl
    return tree.root


def select_edge(node: NodeView, params: SearchParams) -> int:
    """The edge lc0's picking sends a single visit to from ``node`` (``pick_nodes`` with a
    collision limit of 1: the child whose visits in flight went up)."""
    t = node.tree.arrays
    before = {c.index: c.nif for c in node.children if c is not None}
    picks = np.zeros((4, 5), np.int32)
    count = np.zeros(1, np.int64)
    pick_nodes(
        t,
        node.id,
        1,
        params_array(params, False, False),
        np.zeros(0, np.uint8),
        float("inf"),
        -1,
        picks,
        count,
        np.zeros(1, np.int64),
        np.zeros((64, 256), np.int32),
        pick_workspace(64),
    )
    chosen = [c.index for c in node.children if c is not None and c.nif != before.get(c.index, 0)]
    assert len(chosen) == 1
    return chosen[0]


@pytest.fixture
def search() -> Search:
    return make_search()


@pytest.fixture(name="make_search")
def _make_search_fixture():  # type: ignore[no-untyped-def]
    return make_search


@pytest.fixture(name="hand_node")
def _hand_node_fixture():  # type: ignore[no-untyped-def]
    return hand_node


def check_tree(tree: NodeTree) -> None:
    """No visit left in flight; every expanded, non-terminal node has N = 1 + its children's N."""
    t = tree.arrays
    n = tree.num_nodes
    assert (t.nif[:n] == 0).all()
    stack = [tree.root_id]
    while stack:
        x = stack.pop()
        kids = []
        c = int(t.child[x])
        while c >= 0:
            kids.append(c)
            c = int(t.sibling[c])
        if t.n[x] > 0 and t.term[x] == 0 and t.edge0[x] >= 0:
            assert t.n[x] == 1 + sum(int(t.n[k]) for k in kids)
        stack.extend(kids)
