"""Shared helpers: a search over the random backend and hand-made trees."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from lc0py.backends.random_backend import RandomBackend
from lc0py.search.nncache import NNCache
from lc0py.search.node import Node
from lc0py.search.params import SearchParams
from lc0py.search.search import Search, SearchCallbacks, SearchLimits
from lc0py.search.tree import NodeTree


def make_search(
    fen: str | None = None,
    moves: Sequence[str] = (),
    params: SearchParams | None = None,
    limits: SearchLimits | None = None,
    cache: NNCache | None = None,
    tree: NodeTree | None = None,
    backend: RandomBackend | None = None,
    callbacks: SearchCallbacks | None = None,
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
    )


def hand_node(priors: Sequence[float], stats: Sequence[tuple[int, int, float]], wl: float = 0.0) -> Node:
    """A parent with edges of ``priors`` (descending) and children ``(n, nif, wl)`` for a prefix.

    Parent ``n`` = 1 + sum of child visits (its own first visit); moves are placeholders.
    """

    parent = Node()
    parent.expand([i | (i + 8) << 6 for i in range(len(priors))], list(priors))  # packed moves
    total = 1
    for i, (n, nif, cwl) in enumerate(stats):
        child = parent.ensure_child(i)
        child.n, child.nif, child.wl = n, nif, cwl
        total += n
        if n > 0:
            parent.visited_p += priors[i]
    parent.n = total
    parent.wl = wl
    return parent


@pytest.fixture
def search() -> Search:
    return make_search()


@pytest.fixture(name="make_search")
def _make_search_fixture():  # type: ignore[no-untyped-def]
    return make_search


@pytest.fixture(name="hand_node")
def _hand_node_fixture():  # type: ignore[no-untyped-def]
    return hand_node
