"""Stoppers and the legacy time manager (docs/search.md §11)."""

from __future__ import annotations

import threading

import pytest

from lc0py.backends.random_backend import RandomBackend
from lc0py.search.params import SearchParams
from lc0py.search.search import SearchLimits
from lc0py.search.timemgr import LegacyTimeManager


def test_only_move_stops_at_once_with_smart_pruning(make_search) -> None:
    # Black king in check with a single legal reply.
    s = make_search("k7/8/1K6/8/8/8/8/7Q b - - 0 1", limits=SearchLimits(deadline_ms=5000))
    s.run()
    assert s.stop_reason == "only move"
    assert s.best_move()[0].uci() == "a8b8"


class _GatedBackend(RandomBackend):
    """A device whose batches finish only when the test opens the gate (or a hang guard fires)."""

    HANG_GUARD_S = 120.0

    def __init__(self, free: int = 0) -> None:
        super().__init__(delay_ms=0.001)  # > 0: evaluate_async runs evaluate in a thread
        self.gate = threading.Event()
        self.free = free  # batches that pass before the gate closes

    def evaluate(self, batch):  # type: ignore[no-untyped-def]
        if self.free > 0:
            self.free -= 1
        else:
            self.gate.wait(self.HANG_GUARD_S)
        return super().evaluate(batch)


def test_deadline_is_kept_while_the_backend_is_slow(make_search) -> None:
    # Once the root is evaluated, the search answers at its deadline with a batch still on the
    # device, not waiting for it. Checked by order of events, not by a clock: the gate opens only
    # after run() has returned, so a search that waited for the batch returns only when the hang
    # guard opens it.
    gated = _GatedBackend(free=1)  # the root's evaluation passes, the next batches wait
    guard = threading.Timer(gated.HANG_GUARD_S, gated.gate.set)
    guard.start()
    try:
        limits = SearchLimits(deadline_ms=150)
        s = make_search(backend=gated, limits=limits, params=SearchParams(overlap=True))
        s.run()
        assert not gated.gate.is_set(), "the search waited for the batch instead of its deadline"
        assert s.best_move()[0] is not None and s.root.n > 0
    finally:
        gated.gate.set()
        guard.cancel()
    s.join()  # the batch left on the device ends with the search's worker
    assert not any(t.is_alive() for t in s._threads)


def test_no_answer_before_the_first_evaluation(make_search) -> None:
    # lc0's rule (MaybeTriggerStop): a deadline of 0 and a stop both wait for the root's first
    # evaluation; then the move is the evaluated root's best, not the first legal move.
    gated = _GatedBackend()
    guard = threading.Timer(gated.HANG_GUARD_S, gated.gate.set)
    guard.start()
    try:
        s = make_search(backend=gated, limits=SearchLimits(deadline_ms=0), params=SearchParams(overlap=True))
        s.start()
        s.stop()
        assert not s.wait(0.5), "answered before the evaluation came back"  # it cannot: gated
        assert not gated.gate.is_set()
        gated.gate.set()
        assert s.wait(gated.HANG_GUARD_S)
        assert s.root.n > 0 and s.best_move()[0] is not None
    finally:
        gated.gate.set()
        guard.cancel()
    s.join()


def test_depth_limit(make_search) -> None:
    s = make_search(limits=SearchLimits(depth=3, smart_pruning=False))
    s.run()
    assert s.stop_reason == "depth" and s.info().depth >= 3


def test_time_manager_budget() -> None:
    tm = LegacyTimeManager(move_overhead_ms=200)
    first = tm.deadline_ms(ply=0, time_ms=60000, inc_ms=0)
    g = LegacyTimeManager.expected_moves_to_go(0)
    assert first == int((60000 - 200) / g * 2.8)  # first search of a game gets (1 + 1.8) shares
    tm.search_finished(first)
    second = tm.deadline_ms(ply=2, time_ms=59000, inc_ms=0)
    assert second == pytest.approx((59000 - 200) / LegacyTimeManager.expected_moves_to_go(2), abs=1)
    # Never more than the clock minus the overhead; zero when the clock is gone.
    assert LegacyTimeManager().deadline_ms(ply=10, time_ms=150, inc_ms=100) == 0
    assert LegacyTimeManager().deadline_ms(ply=40, time_ms=1000, inc_ms=5000, movestogo=1) <= 800


def test_piggy_bank_carries_unused_time() -> None:
    tm = LegacyTimeManager(200)
    tm.first_search = False
    d1 = tm.deadline_ms(ply=20, time_ms=30000, inc_ms=0)
    tm.search_finished(d1 // 2)  # stopped early (smart pruning)
    d2 = tm.deadline_ms(ply=22, time_ms=30000 - d1 // 2, inc_ms=0)
    assert d2 > d1  # the saved half comes back on top


def test_ram_limit_stops_before_the_limit(make_search) -> None:
    from lc0py.search.core.nncache import NNCache

    cache = NNCache(1000)
    limit_mb = 3
    s = make_search(limits=SearchLimits(ram_limit_mb=limit_mb, smart_pruning=False), cache=cache)
    s.run()
    assert s.error is None and s.stop_reason == "ram limit"
    assert s.tree.capacity_bytes() + cache.nbytes() <= limit_mb * 1_000_000
    assert s.playouts > 5000  # it did use most of the room


def test_tree_bytes_per_node(make_search) -> None:
    s = make_search(limits=SearchLimits(nodes=5000, smart_pruning=False))
    s.run()
    # 49 bytes a node + 4 bytes an edge (lc0: ~80 + 4): the target is <= 250
    assert 49 < s.bytes_per_node() <= 250


def test_position_after_clear_is_not_played_on_the_old_game() -> None:
    """``ucinewgame`` (or a new net) clears the tree; the same moves sent again must give the same
    position, not those moves replayed on top of the previous game's last position (the UCI fuzz
    found ``push() expects move to be pseudo-legal``)."""
    from lc0py.search.core.tree import NodeTree

    moves = "f2f4 d7d6 b2b3 c8e6".split()
    tree = NodeTree()
    tree.reset_to_position(None, moves)
    want = tree.history.board.fen()
    tree.clear()
    tree.reset_to_position(None, moves)
    assert tree.history.board.fen() == want
    tree.clear()
    tree.reset_to_position(None, moves[:2])
    assert len(tree.history.board.move_stack) == 2


def test_reused_root_at_the_node_limit_gets_no_playout(make_search) -> None:
    # lc0's watchdog checks the stoppers before the worker's first iteration: a reused root that
    # already has the `go nodes` visits is answered without a playout (issue 12, the Chess960
    # searchmoves case: a second playout would pick the move by visits, not by prior).
    first = make_search(limits=SearchLimits(nodes=20, smart_pruning=False))
    first.run()
    tree = first.tree
    tree.reset_to_position(None, [])
    visits = tree.root.n
    assert visits >= 20
    again = make_search(tree=tree, limits=SearchLimits(nodes=visits, smart_pruning=False))
    again.run()
    assert again.playouts == 0 and again.stop_reason == "nodes"
    assert tree.root.n == visits
    more = make_search(tree=tree, limits=SearchLimits(nodes=visits + 5, smart_pruning=False))
    more.run()
    assert more.playouts >= 5


@pytest.mark.parametrize(
    "limits",
    [SearchLimits(nodes=777, smart_pruning=False), SearchLimits(depth=4, smart_pruning=False)],
    ids=["nodes", "depth"],
)
def test_counter_stoppers_stop_where_the_full_check_does(make_search, limits: SearchLimits) -> None:
    """Without smart pruning, RAM limit or ``go mate`` the stoppers read only counters and the
    clock (``_check_counter_limits``, no root statistics a batch): the search stops after the
    same batch, for the same reason, as through ``should_stop``."""
    runs = []
    for full in (False, True):
        s = make_search(limits=SearchLimits(nodes=limits.nodes, depth=limits.depth, smart_pruning=False))
        assert not s._root_stoppers
        s._root_stoppers = full
        s.run()
        s.join()
        runs.append((s.playouts, s.batches, s.stop_reason, int(s.tree.arrays.n[s.root_id])))
    assert runs[0] == runs[1] and runs[0][2] in ("nodes", "depth"), runs
