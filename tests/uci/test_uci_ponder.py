"""Pondering as lc0 does it (issue 12 item 3; lc0's ``src/engine.cc``), checked as a mechanism:
what is searched while pondering, where the clock starts, which time manager budgets the move.
No wall-clock time is asserted (scripts/bench/ponder_clock.py measures the clock use)."""

from __future__ import annotations

import time

import chess

from lc0py.search.search import PvLine, SearchInfo
from lc0py.search.timemgr import LegacyTimeManager
from lc0py.uci.engine import ponder_view
from tests.uci.test_uci_honest import TINY, Session

E4, E5, NF3 = (chess.Move.from_uci(m) for m in ("e2e4", "e7e5", "g1f3"))


def _pondering_session() -> Session:
    s = Session(("WeightsFile", str(TINY)), ("Backend", "numpy"), ("Ponder", "true"))
    s.send("position startpos moves e2e4 e7e5")
    s.engine.handle("go ponder wtime 5000 btime 5000")
    return s


def test_ponder_searches_the_position_before_the_ponder_move() -> None:
    s = _pondering_session()
    search = s.engine.search
    assert search is not None and search.limits.infinite and search.limits.deadline_ms is None
    assert s.engine.tree.history.board.move_stack == [E4]  # black to move: the move we expect
    s.send("stop")
    search.wait(120)


def test_ponderhit_starts_the_clock_and_the_budget_there() -> None:
    s = _pondering_session()
    ponder_search = s.engine.search
    assert ponder_search is not None
    before = time.perf_counter()
    s.engine.handle("ponderhit")
    search = s.engine.search
    assert search is not None and search is not ponder_search
    # The clock of the real search starts at ponderhit, not at position or go ponder ...
    assert search.start_time == s.engine.clock_start >= before
    # ... and its deadline is the time manager's budget for the full position (white, ply 2),
    # from the one time manager of this game (created before the ponder search, not rebuilt).
    assert not search.limits.infinite
    assert search.limits.deadline_ms == LegacyTimeManager(200).deadline_ms(2, 5000, 0)
    assert s.engine.tree.history.board.move_stack == [E4, E5]
    search.wait(120)
    best = s.send("isready")[-2].split()
    assert best[0] == "bestmove"
    board = chess.Board()
    board.push_uci("e2e4")
    board.push_uci("e7e5")
    assert chess.Move.from_uci(best[1]) in board.legal_moves


def test_ponder_miss_keeps_the_time_manager() -> None:
    s = _pondering_session()
    tm = s.engine.tm
    out = s.send("stop")
    assert s.engine.search is not None and s.engine.search.wait(120)
    assert out == [] or out[-1].startswith("bestmove")
    s.send("position startpos moves e2e4 d7d5")  # the opponent did not play the ponder move
    s.send("go wtime 5000 btime 5000")
    assert s.engine.tm is tm  # the same game goes on: lc0 keeps its time manager
    s.send("ucinewgame")
    assert s.engine.tm is not tm


def test_ponder_info_is_from_the_side_after_the_ponder_move() -> None:
    lines = [
        PvLine([NF3, E5], -0.1, 0.3, 20.0, 5),
        PvLine([E5, NF3, chess.Move.from_uci("b8c6")], 0.25, 0.5, 30.0, 9),
    ]
    info = SearchInfo(
        depth=3, seldepth=5, time_ms=10, nodes=20, nps=None, playouts=20, nn_evals=20, lines=lines
    )
    view = ponder_view(info, E5)
    assert (view.depth, view.seldepth) == (2, 4)
    assert len(view.lines) == 1
    line = view.lines[0]
    assert line.moves == [NF3, chess.Move.from_uci("b8c6")]  # the PV after the ponder move
    assert (line.wl, line.d) == (0.1, 0.3)  # the best line's numbers, for the other side
