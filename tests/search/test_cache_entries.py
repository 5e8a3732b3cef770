"""``_apply`` packs a whole batch's cache entries at once: each entry must be what
``CacheEntry.make`` gives for the node's sorted moves and priors."""

from __future__ import annotations

from lc0py.search.nncache import CacheEntry, position_key
from lc0py.search.node import TERMINAL
from lc0py.search.params import SearchParams
from lc0py.search.search import SearchLimits


def test_batch_packed_entries_equal_cache_entry_make(make_search) -> None:
    s = make_search(
        "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
        params=SearchParams(overlap=False, minibatch_size=64),
        limits=SearchLimits(nodes=1500, smart_pruning=False),
    )
    s.run()
    checked = 0
    stack = [s.root]
    while stack:
        node = stack.pop()
        stack.extend(c for c in node.children if c is not None)
        if node.moves is None or node.rec is None:
            continue
        entry = s.cache._data.get(position_key(node.rec.key, node.rec.repetitions))
        assert entry is not None
        if any(c is not None and c.terminal == TERMINAL for c in node.children):
            continue  # a proven loss below zeroes its edge prior in the node only
        want = CacheEntry.make(entry[0], entry[1], entry[2], node.moves, node.p)
        assert entry == want
        assert CacheEntry.moves(entry) == node.moves and CacheEntry.priors(entry) == node.p
        checked += 1
    assert checked > 100
