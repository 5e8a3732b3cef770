"""``go nodes``: where a search stops past its node limit (issue 29, item 5).

lc0 0.32.1 checks the node limit after every batch (the search thread's ``UpdateCounters``) and
also from its watchdog thread (``Search::WatchdogThread`` runs ``MaybeTriggerStop`` every <= 100
ms). While a batch is evaluated the playouts already hold the visits its gather backed up out of
order (cache hits, terminals), so when those reach the limit lc0 answers then, before the batch's
own visits, and its search thread backs the batch up afterwards. lc0py checks the stoppers once
after every gather that backed visits up out of order (``Search._check_stoppers_in_flight``).
"""

from __future__ import annotations

import numpy as np
import pytest

from lc0py.backends.random_backend import RandomBackend
from lc0py.search.core.nncache import NNCache
from lc0py.search.core.tree import NodeTree
from lc0py.search.params import SearchParams
from lc0py.search.search import Search, SearchCallbacks, SearchInfo, SearchLimits

MINIBATCH = 256


def _search(cache: NNCache, nodes: int, infos: list[SearchInfo], overlap: bool = False) -> Search:
    tree = NodeTree()
    tree.reset_to_position(None, [])
    params = SearchParams(minibatch_size=MINIBATCH, overlap=overlap)
    limits = SearchLimits(nodes=nodes, smart_pruning=False)
    s = Search(tree, RandomBackend(), params, limits, cache, SearchCallbacks(on_info=infos.append))
    s.run()
    s.join()
    return s


@pytest.mark.parametrize(("overlap", "warm"), [(False, 300), (True, 200)])
def test_a_limit_reached_out_of_order_is_answered_before_the_batch(overlap: bool, warm: int) -> None:
    """A cache warmed by a short search makes most leaves of the next search cache hits,
    backed up while its batches are gathered: one gather takes the root past 800 (without
    overlap from 581 visits). Before, the answer waited for that batch's network leaves (957
    nodes; with overlap 818, and the batch gathered meanwhile was dropped); now it is sent at
    the count the gather reached (800; with overlap 817), and the batches in flight join the
    tree afterwards (929 with overlap), as lc0's search threads finish their iterations."""
    cache = NNCache(100000)
    _search(cache, warm, [], overlap)
    infos: list[SearchInfo] = []
    s = _search(cache, 800, infos, overlap)
    answered = infos[-1].nodes  # the info line sent with bestmove
    assert s.stop_reason == "nodes"
    assert 800 <= answered < 800 + MINIBATCH // 4, [i.nodes for i in infos]
    # the batch in flight at the answer was backed up after it, as lc0's search thread does
    t = s.tree.arrays
    root = s.root_id
    assert int(t.n[root]) == s.playouts + s.initial_visits > answered
    used = t.meta[0]
    assert not np.any(t.nif[:used]), "visits left in flight after the search"
    children = [c.n for c in s.root.children if c is not None]
    assert int(t.n[root]) == 1 + sum(children)
    best, _ = s.best_move()
    assert best is not None


def test_a_limit_reached_by_a_batch_is_answered_after_it() -> None:
    """Without visits backed up out of order the limit is met only by a batch's backup (fresh
    cache): the answer then counts the whole batch, as lc0's does."""
    infos: list[SearchInfo] = []
    s = _search(NNCache(100000), 800, infos)
    assert infos[-1].nodes == s.playouts + s.initial_visits >= 800
