"""Backup signs, NN cache hits and tree reuse (docs/search.md §2, §11, §12)."""

from __future__ import annotations

import chess
import pytest

from lc0py.backends.random_backend import RandomBackend
from lc0py.chess.encoding import encode_batch
from lc0py.chess.history import PositionHistory
from lc0py.search.core.nncache import NNCache
from lc0py.search.core.tree import NodeTree
from lc0py.search.params import SearchParams
from lc0py.search.search import SearchLimits
from tests.search.conftest import check_tree


def _q(backend: RandomBackend, history: PositionHistory) -> tuple[float, float]:
    out = backend.evaluate(encode_batch([history.encode(backend.info.input_format)]))
    return float(out.q[0]), float(out.wdl[0, 1])


def test_backup_signs(make_search) -> None:
    backend = RandomBackend()
    # lc0 checks the node limit after each batch: one visit a batch stops exactly at 2
    params = SearchParams(overlap=False, minibatch_size=1)
    s = make_search(limits=SearchLimits(nodes=2, smart_pruning=False), backend=backend, params=params)
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

    assert 500 <= s.root.n < 500 + 256  # the limit is checked after each batch (lc0)
    walk(s.root)


def test_nn_cache_hits_replace_evaluations(make_search) -> None:
    cache = NNCache(100000)
    no_prefetch = SearchParams(overlap=False, max_prefetch=0)
    first = make_search(cache=cache, params=no_prefetch, limits=SearchLimits(nodes=300, smart_pruning=False))
    first.run()
    assert first.nn_evals > 0 and len(cache) == first.nn_evals
    hits_before = cache.hits
    calls = []

    class CountingBackend(RandomBackend):
        def evaluate(self, batch):  # type: ignore[override]
            calls.append(len(batch))
            return super().evaluate(batch)

    # The top of the tree was evaluated by the first search: the root and the first visits come
    # from the cache (lc0 checks the node limit after the batch, which may go past the old tree).
    params = SearchParams(overlap=False, minibatch_size=1)
    second = make_search(
        cache=cache,
        backend=CountingBackend(),
        params=params,
        limits=SearchLimits(nodes=3, smart_pruning=False),
    )
    second.run()
    assert second.error is None and second.root.n >= 3
    assert cache.hits - hits_before >= 3 and second.nn_evals < second.playouts
    # The cached root priors are exactly the ones the first search expanded with.
    assert second.root.moves == first.root.moves and second.root.p == first.root.p
    assert all(isinstance(x, int) for x in second.root.moves)


def test_prefetch_fills_the_cache_beyond_the_visits(make_search) -> None:
    # lc0's MaxPrefetch: a batch with fewer network requests is topped up with likely positions
    cache = NNCache(100000)
    params = SearchParams(overlap=False, minibatch_size=1, max_prefetch=8)
    s = make_search(cache=cache, params=params, limits=SearchLimits(nodes=100, smart_pruning=False))
    s.run()
    assert s.error is None and len(cache) > s.nn_evals + 50
    # the prefetched evaluations are used: later visits find them in the cache
    assert cache.hits > 20


def test_tree_reuse_keeps_the_subtree(make_search) -> None:
    tree = NodeTree()
    tree.reset_to_position(None, [])
    s = make_search(tree=tree, limits=SearchLimits(nodes=400, smart_pruning=False))
    s.run()
    best, ponder = s.best_move()
    kept = tree.root.child_for(best).child_for(ponder)
    assert kept is not None and kept.n > 0
    visits, wl, moves = kept.n, kept.wl, kept.moves
    assert tree.reset_to_position(None, [best.uci(), ponder.uci()]) is True
    root = tree.root  # the kept subtree, compacted: same values, no parent
    assert (root.n, root.wl, root.moves) == (visits, wl, moves) and root.parent is None
    assert tree.num_nodes < s.tree.num_nodes or tree.num_nodes <= visits + 1
    s2 = make_search(tree=tree, limits=SearchLimits(nodes=visits + 50, smart_pruning=False))
    s2.run()
    assert s2.initial_visits == visits and s2.playouts >= 50 and s2.info().nodes == visits + s2.playouts
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
    assert s.error is None and s.root.n >= 6000


def test_trees_stay_consistent_through_stops_reuse_and_overlap() -> None:
    import random
    import time

    from lc0py.search.search import Search

    rng = random.Random(1)
    backend = RandomBackend(delay_ms=0.5)  # batches really are in flight while gathering
    cache = NNCache(50000)
    for _game in range(2):
        tree = NodeTree()
        board = chess.Board()
        moves: list[str] = []
        for _ply in range(8):
            tree.reset_to_position(None, moves)
            params = SearchParams(
                overlap=rng.random() < 0.5,
                minibatch_size=rng.choice([1, 7, 32, 256]),
                threads=rng.choice([0, 2, 4, 8]),
            )
            s = Search(
                tree, backend, params, SearchLimits(nodes=rng.choice([50, 400]), smart_pruning=False), cache
            )
            if rng.random() < 0.4:  # stopped at a random moment
                s.start()
                time.sleep(rng.random() * 0.03)
                s.stop()
                assert s.wait(120.0)
            else:
                s.run()
            s.join(120.0)
            assert s.error is None
            check_tree(tree)
            best, _ = s.best_move()
            board.push(best)
            moves.append(best.uci())
