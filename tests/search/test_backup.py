"""Backup signs, NN cache hits and tree reuse (docs/search.md §2, §11, §12)."""

from __future__ import annotations

import chess
import pytest

from lc0py.backends.random_backend import RandomBackend
from lc0py.chess.encoding import encode_batch
from lc0py.chess.history import PositionHistory
from lc0py.search.nncache import NNCache
from lc0py.search.search import SearchLimits
from lc0py.search.tree import NodeTree


def _q(backend: RandomBackend, history: PositionHistory) -> tuple[float, float]:
    out = backend.evaluate(encode_batch([history.encode(backend.info.input_format)]))
    return float(out.q[0]), float(out.wdl[0, 1])


def test_backup_signs(make_search) -> None:
    backend = RandomBackend()
    s = make_search(limits=SearchLimits(nodes=2, smart_pruning=False), backend=backend)
    s.run()
    root = s.root
    child = next(c for c in s._root_children() if c.n == 1)
    hist = PositionHistory.from_fen(None)
    q_root, d_root = _q(backend, hist)
    hist.push(child.move)
    q_child, d_child = _q(backend, hist)
    # Node values are from the view of the player who moved into the node: -q(side to move).
    assert child.wl == pytest.approx(-q_child)
    assert child.d == pytest.approx(d_child)
    # Root (black "moved into" it): mean of its own -q_root and the child's value seen from black.
    assert root.n == 2
    assert root.wl == pytest.approx((-q_root + q_child) / 2)
    assert root.d == pytest.approx((d_root + d_child) / 2)
    assert root.m == pytest.approx((0 + 1) / 2)
    assert root.nif == 0 and child.nif == 0


def test_visits_add_up_and_nothing_stays_in_flight(make_search) -> None:
    s = make_search(limits=SearchLimits(nodes=500, smart_pruning=False))
    s.run()

    def walk(node):
        assert node.nif == 0
        kids = [c for c in node.children if c is not None]
        if node.n and not node.terminal:
            assert node.n == 1 + sum(c.n for c in kids)
        for c in kids:
            walk(c)

    assert s.root.n == 500
    walk(s.root)


def test_nn_cache_hits_replace_evaluations(make_search) -> None:
    cache = NNCache(100000)
    first = make_search(cache=cache, limits=SearchLimits(nodes=300, smart_pruning=False))
    first.run()
    assert first.nn_evals > 0 and len(cache) == first.nn_evals
    hits_before = cache.hits

    class NoNetwork(RandomBackend):
        def evaluate(self, batch):  # type: ignore[override]
            raise AssertionError("the cache should have answered")

    # The top of the tree was evaluated by the first search: no network call is needed.
    second = make_search(cache=cache, backend=NoNetwork(), limits=SearchLimits(nodes=3, smart_pruning=False))
    second.run()
    assert second.error is None and second.nn_evals == 0 and second.root.n == 3
    assert cache.hits - hits_before >= 3
    # The cached root priors are exactly the ones the first search expanded with.
    assert second.root.moves == first.root.moves and second.root.p == first.root.p
    assert all(isinstance(x, int) for x in second.root.moves)


def test_cache_capacity_is_respected() -> None:
    cache = NNCache(3)
    from lc0py.search.nncache import CacheEntry

    for k in range(10):
        cache.put(bytes([k]), CacheEntry.make(0.0, 0.0, 0.0, [], []))
    assert len(cache) == 3 and bytes([9]) in cache and bytes([0]) not in cache


def test_tree_reuse_keeps_the_subtree(make_search) -> None:
    tree = NodeTree()
    tree.reset_to_position(None, [])
    s = make_search(tree=tree, limits=SearchLimits(nodes=400, smart_pruning=False))
    s.run()
    best, ponder = s.best_move()
    kept = tree.root.child_for(best).child_for(ponder)
    assert kept is not None and kept.n > 0
    visits = kept.n
    assert tree.reset_to_position(None, [best.uci(), ponder.uci()]) is True
    assert tree.root is kept and kept.parent is None
    s2 = make_search(tree=tree, limits=SearchLimits(nodes=visits + 50, smart_pruning=False))
    s2.run()
    assert s2.initial_visits == visits and s2.playouts == 50 and s2.info().nodes == visits + 50
    # A different game starts from scratch.
    assert tree.reset_to_position("8/8/8/8/8/8/k7/K6R w - - 0 1", []) is False
    assert tree.root.n == 0


def test_searchmoves_restrict_the_root(make_search) -> None:
    only = [chess.Move.from_uci("a2a3"), chess.Move.from_uci("h2h3")]
    s = make_search(limits=SearchLimits(nodes=200, searchmoves=only, smart_pruning=False))
    s.run()
    visited = {c.move for c in s.root.children if c is not None and c.n > 0}
    assert visited <= set(only) and s.best_move()[0] in only


def test_backend_error_still_answers(make_search) -> None:
    class Broken(RandomBackend):
        def evaluate(self, batch):  # type: ignore[override]
            raise RuntimeError("device lost")

    got = []
    from lc0py.search.search import SearchCallbacks

    cb = SearchCallbacks(on_bestmove=lambda m, p: got.append(m), on_message=got.append)
    s = make_search(backend=Broken(), callbacks=cb, limits=SearchLimits(infinite=True))
    s.start()
    assert s.wait(120.0)  # a hang guard, not a speed claim
    assert any("device lost" in str(x) for x in got)
    assert isinstance(got[-1], chess.Move) and got[-1] in chess.Board().legal_moves


def test_cache_never_mixes_positions_with_colliding_int_hashes(make_search) -> None:
    # hash(1 << 63) == hash(4) in CPython: a rook on h8 and one on c1 must still be different keys.
    # Reached in this search: ... a5a6 h5c5 b4a4 c5c1 a4e4 (rook c1) and ... h5h8 (rook h8).
    s = make_search(
        "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 11", limits=SearchLimits(nodes=6000, smart_pruning=False)
    )
    s.run()
    assert s.error is None and s.root.n == 6000
