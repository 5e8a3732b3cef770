"""Whole games through python-chess: legal moves only, no crash, no hang.

The engine plays on a clock that runs, as in a real game, but no test asserts wall-clock time
(a loaded CI machine would turn that red): how the time manager budgets a clock is checked
deterministically in tests/search/test_limits.py; here a clock that ran out is floored so the
game goes on.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

import chess
import chess.engine
import pytest

ROOT = Path(__file__).resolve().parents[2]
CLOCK, INC = 2.0, 0.1
MIN_CLOCK = 0.05  # a clock that ran out on a loaded machine goes on from here


def _stockfish() -> str | None:
    found = shutil.which("stockfish")
    if found is None and os.path.exists("/usr/games/stockfish"):  # Debian's package path
        found = "/usr/games/stockfish"
    return found


def _lc0py(weights: Path, *extra: str) -> chess.engine.SimpleEngine:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, "-m", "lc0py", "uci", "--weights", str(weights), "--backend", "numpy", *extra]
    return chess.engine.SimpleEngine.popen_uci(cmd, cwd=ROOT, env=env, timeout=30)


def _play(
    white: chess.engine.SimpleEngine,
    black: chess.engine.SimpleEngine,
    max_plies: int,
    other_limit: chess.engine.Limit | None = None,
    ours: tuple[bool, ...] = (True, False),
) -> chess.Board:
    """Play with a real clock for our side(s); assert legality of every move."""
    board = chess.Board()
    clock = {chess.WHITE: CLOCK, chess.BLACK: CLOCK}
    engines = {chess.WHITE: white, chess.BLACK: black}
    while not board.is_game_over(claim_draw=True) and board.ply() < max_plies:
        side = board.turn
        ours_now = (side == chess.WHITE and ours[0]) or (side == chess.BLACK and ours[1])
        if ours_now or other_limit is None:
            limit = chess.engine.Limit(
                white_clock=clock[chess.WHITE], black_clock=clock[chess.BLACK], white_inc=INC, black_inc=INC
            )
        else:
            limit = other_limit
        t = time.perf_counter()
        result = engines[side].play(board, limit)
        used = time.perf_counter() - t
        if ours_now:
            clock[side] = max(clock[side] - used, MIN_CLOCK) + INC
        assert result.move is not None and result.move in board.legal_moves
        board.push(result.move)
    return board


def test_self_play_with_a_short_clock(tiny_weights: Path) -> None:
    engine = _lc0py(tiny_weights)
    try:
        board = _play(engine, engine, max_plies=40)
        assert board.ply() >= 10
        # analysis -> stop gives a legal bestmove.
        with engine.analysis(board) as analysis:
            time.sleep(0.5)
            analysis.stop()
            best = analysis.wait()
        if not board.is_game_over():
            assert best.move in board.legal_moves
    finally:
        engine.quit()


def test_against_stockfish(tiny_weights: Path) -> None:
    path = _stockfish()
    if path is None:
        pytest.skip("stockfish not installed (apt-get install stockfish)")
    ours = _lc0py(tiny_weights)
    sf = chess.engine.SimpleEngine.popen_uci(path)
    try:
        sf.configure({"Skill Level": 0, "Threads": 1, "Hash": 16})
        board = _play(ours, sf, max_plies=60, other_limit=chess.engine.Limit(time=0.01), ours=(True, False))
        assert board.ply() >= 4
    finally:
        ours.quit()
        sf.quit()


def test_pondering_game_against_stockfish(tiny_weights: Path) -> None:
    """python-chess with ponder=True: go ponder after each move, then ponderhit or stop + the real
    position; every move legal, no hang (the mechanism is checked in test_uci_ponder.py)."""
    path = _stockfish()
    if path is None:
        pytest.skip("stockfish not installed (apt-get install stockfish)")
    ours = _lc0py(tiny_weights, "--minibatch-size=16")
    sf = chess.engine.SimpleEngine.popen_uci(path)
    try:
        sf.configure({"Skill Level": 0, "Threads": 1, "Hash": 16})
        board = chess.Board()
        pondered = 0
        while not board.is_game_over(claim_draw=True) and board.ply() < 30:
            # A node limit, not a clock: on a loaded machine a clocked search may find no reply
            # to ponder on; the clock side of pondering is checked in test_uci_ponder.py.
            result = ours.play(board, chess.engine.Limit(nodes=30), ponder=True)
            assert result.move in board.legal_moves
            pondered += result.ponder is not None
            board.push(result.move)
            if board.is_game_over():
                break
            board.push(sf.play(board, chess.engine.Limit(time=0.05)).move)
        assert board.ply() >= 10 and pondered > 0
    finally:
        ours.quit()
        sf.quit()
