"""Chess960 through python-chess (issue 12 item 1): positions, castling both ways, ``searchmoves``,
whole games against lc0 0.32.1's own binary (same net) and Stockfish — no illegal move, no hang.

python-chess sets ``UCI_Chess960``, sends Shredder-FENs and king-takes-rook castling, and refuses
any illegal ``bestmove``/``ponder``/``pv`` move by raising, so a finished game is the proof.
"""

from __future__ import annotations

import os
import random
import shutil
import sys
from pathlib import Path

import chess
import chess.engine
import pytest

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "weights" / "tiny-seed1.pb.gz"


def _lc0_binary() -> str | None:
    found = shutil.which("lc0")
    beside = Path(sys.executable).parent / "lc0"
    if found is None and beside.exists():
        found = str(beside)
    return found


def _stockfish() -> str | None:
    found = shutil.which("stockfish")
    if found is None and os.path.exists("/usr/games/stockfish"):
        found = "/usr/games/stockfish"
    return found


def _lc0py() -> chess.engine.SimpleEngine:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, "-m", "lc0py", f"--weights={TINY}", "--backend=numpy"]
    return chess.engine.SimpleEngine.popen_uci(cmd, cwd=ROOT, env=env, timeout=60)


def _lc0() -> chess.engine.SimpleEngine:
    path = _lc0_binary()
    if path is None:
        pytest.skip("lc0's binary is not installed")
    return chess.engine.SimpleEngine.popen_uci([path, f"--weights={TINY}", "--backend=eigen"], timeout=60)


def chess960_positions(count: int, seed: int) -> list[chess.Board]:
    """Chess960 starts plus a few random plies; every third keeps castling possible soon."""
    rng = random.Random(seed)
    boards = []
    for k in range(count):
        board = chess.Board.from_chess960_pos(rng.randrange(960))
        for _ in range(rng.randrange(0, 12)):
            moves = list(board.legal_moves)
            if not moves:
                break
            board.push(rng.choice(moves))
        if board.is_game_over():
            board = chess.Board.from_chess960_pos(k)
        if k % 2 == 1:  # back ranks cleared but kings and rooks: castling is legal on both wings
            for square in chess.SquareSet(chess.BB_RANK_1 | chess.BB_RANK_8):
                if board.piece_type_at(square) not in (chess.KING, chess.ROOK, None):
                    board.remove_piece_at(square)
            board = chess.Board(board.fen(shredder=True), chess960=True)
        boards.append(board)
    return boards


def test_same_move_as_lc0_at_one_node() -> None:
    """One node: both play the net's top policy move, so the planes, the move mapping and the
    castling notation (king takes rook, in and out) agree with lc0's. The searchmoves search
    reuses the first one's root (one visit): both engines answer it without a playout, by prior
    (lc0's watchdog checks the node limit before the first iteration)."""
    lc0 = _lc0()
    ours = _lc0py()
    try:
        for board in chess960_positions(20, seed=12):
            want = lc0.play(board, chess.engine.Limit(nodes=1)).move
            got = ours.play(board, chess.engine.Limit(nodes=1)).move
            assert got == want, board.fen(shredder=True)
            castles = list(board.generate_castling_moves())
            if castles:  # searchmoves in Chess960 notation, answered in it
                want = lc0.play(board, chess.engine.Limit(nodes=1), root_moves=castles).move
                got = ours.play(board, chess.engine.Limit(nodes=1), root_moves=castles).move
                assert got == want and got in castles
    finally:
        ours.quit()
        lc0.quit()


def _play_game(
    white: chess.engine.SimpleEngine,
    black: chess.engine.SimpleEngine,
    board: chess.Board,
    limits: tuple[chess.engine.Limit, chess.engine.Limit],
    max_plies: int,
) -> chess.Board:
    engines = (black, white)
    while not board.is_game_over(claim_draw=True) and board.ply() < max_plies:
        limit = limits[0] if board.turn == chess.WHITE else limits[1]
        result = engines[board.turn].play(board, limit, info=chess.engine.INFO_ALL)
        assert result.move in board.legal_moves  # python-chess already refuses an illegal one
        board.push(result.move)
    return board


@pytest.mark.parametrize(
    ("games", "plies"), [(1, 30), pytest.param(4, 120, marks=pytest.mark.slow)], ids=["one", "four"]
)
def test_games_against_lc0_binary(games: int, plies: int) -> None:
    lc0 = _lc0()
    ours = _lc0py()
    try:
        for k, board in enumerate(chess960_positions(games, seed=7)):
            start = board.ply()
            pair = (ours, lc0) if k % 2 == 0 else (lc0, ours)
            limit = chess.engine.Limit(nodes=30)
            board = _play_game(*pair, board, (limit, limit), max_plies=start + plies)
            assert board.ply() > start
    finally:
        ours.quit()
        lc0.quit()


@pytest.mark.parametrize(
    ("games", "plies"), [(1, 60), pytest.param(4, 160, marks=pytest.mark.slow)], ids=["one", "four"]
)
def test_games_against_stockfish(games: int, plies: int) -> None:
    path = _stockfish()
    if path is None:
        pytest.skip("stockfish not installed (apt-get install stockfish)")
    sf = chess.engine.SimpleEngine.popen_uci(path)
    ours = _lc0py()
    try:
        sf.configure({"Skill Level": 0, "Threads": 1, "Hash": 16})
        for k, board in enumerate(chess960_positions(games, seed=3)):
            start = board.ply()
            ours_limit, sf_limit = chess.engine.Limit(nodes=30), chess.engine.Limit(time=0.01)
            if k % 2 == 0:
                board = _play_game(ours, sf, board, (ours_limit, sf_limit), max_plies=start + plies)
            else:
                board = _play_game(sf, ours, board, (sf_limit, ours_limit), max_plies=start + plies)
            assert board.ply() > start
    finally:
        ours.quit()
        sf.quit()
