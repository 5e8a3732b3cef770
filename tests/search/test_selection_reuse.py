"""``_descend`` reuses a node's last PUCT choice (``Node.sel``) while that child still beats the
runner-up; the trees must equal those of a search that scans every node on every descent."""

from __future__ import annotations

import pytest

from lc0py.backends.random_backend import RandomBackend
from lc0py.search.nncache import NNCache
from lc0py.search.params import SearchParams
from lc0py.search.search import Search, SearchLimits
from lc0py.search.tree import NodeTree


class _ScanAlways(Search):
    def _descend(self):  # type: ignore[no-untyped-def]
        self._sel_tag = object()  # every stored choice is stale
        return super()._descend()


def _tree_stats(search: Search) -> list[tuple[int, int, float, float]]:
    out = []
    stack = [search.root]
    while stack:
        node = stack.pop()
        out.append((node.index, node.n, node.wl, node.d))
        stack.extend(c for c in node.children if c is not None)
    return out


@pytest.mark.parametrize(
    "fen",
    [
        None,
        "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
        "7k/8/5K2/8/8/8/8/R7 w - - 0 1",  # proven nodes (StickyEndgames)
    ],
)
@pytest.mark.parametrize("minibatch", [0, 16])
@pytest.mark.parametrize("overlap", [False, True])
def test_reused_choices_give_the_same_tree(fen, minibatch: int, overlap: bool) -> None:
    stats = []
    for cls in (Search, _ScanAlways):
        tree = NodeTree()
        tree.reset_to_position(fen, [])
        params = SearchParams(minibatch_size=minibatch, overlap=overlap)
        s = cls(tree, RandomBackend(), params, SearchLimits(nodes=1500, smart_pruning=False), NNCache(100000))
        s._worker()
        stats.append(_tree_stats(s))
    assert stats[0] == stats[1]
