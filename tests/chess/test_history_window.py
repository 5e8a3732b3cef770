"""``PositionHistory.from_board(board, recent_only=True)``: only the moves the network input can
depend on are replayed, and every input format encodes every position of a game exactly as the
whole game's replay does (history planes, repetitions, ep markers, castling, Chess960, FEN roots)."""

from __future__ import annotations

import random

import chess
import pytest

from lc0py.chess import PositionHistory
from lc0py.chess.history import HISTORY_WINDOW
from lc0py.chess.testing import PLAYOUT_FENS, special_move_games
from lc0py.errors import PositionError

FORMATS = (1, 2, 3, 4, 5, 132, 133)


def _facts(record: object) -> tuple[object, ...]:
    return tuple(getattr(record, f) for f in ("pieces", "castling", "ep", "turn", "rule50", "repetitions"))


def _same_input(board: chess.Board) -> int:
    """Check every format on ``board``; return how many positions the window kept."""
    whole = PositionHistory.from_board(board)
    recent = PositionHistory.from_board(board, recent_only=True)
    for fmt in FORMATS:
        a, b = whole.encode(fmt), recent.encode(fmt)
        assert a.transform == b.transform, (fmt, board.fen())
        assert a.masks.tolist() == b.masks.tolist(), (fmt, board.fen())
        assert a.values.tolist() == b.values.tolist(), (fmt, board.fen())
    last = slice(-HISTORY_WINDOW, None)
    assert [_facts(r) for r in whole._records[last]] == [_facts(r) for r in recent._records[last]]
    assert recent.board.fen() == board.fen() and len(board.move_stack) + 1 == len(whole)
    return len(recent)


def _every_prefix(root: chess.Board, moves: list[chess.Move]) -> list[chess.Board]:
    board, out = root.copy(), []
    for move in moves:
        board.push(move)
        out.append(board.copy())
    return out


def _shuffling_game(rng: random.Random) -> tuple[chess.Board, list[chess.Move]]:
    """Random moves broken by knight shuffles, so that positions repeat (repetition planes) and
    long stretches pass without a pawn move or capture."""
    board = chess.Board()
    moves: list[chess.Move] = []
    shuffle = [chess.Move.from_uci(u) for u in ("g1f3", "g8f6", "f3g1", "f6g8")]
    for _ in range(rng.randrange(20, 140)):
        if rng.random() < 0.5 and all(board.is_legal(m) for m in shuffle[:1]):
            for m in shuffle * rng.randrange(1, 3):
                if not board.is_legal(m) or board.is_game_over():
                    break
                board.push(m)
                moves.append(m)
        legal = list(board.legal_moves)
        if not legal or board.is_game_over():
            break
        move = rng.choice(legal)
        board.push(move)
        moves.append(move)
    return board.root(), moves


@pytest.mark.parametrize("seed", range(6))
def test_random_and_repeating_games_encode_the_same(seed: int) -> None:
    rng = random.Random(seed)
    kept, plies = 0, 0
    for _ in range(4):
        root, moves = _shuffling_game(rng)
        for board in _every_prefix(root, moves):
            kept += _same_input(board)
            plies += len(board.move_stack) + 1
    fen = rng.choice([f for f in PLAYOUT_FENS if f is not None])  # FEN roots with a rule-50 count
    board = chess.Board(fen)
    for _ in range(120):
        legal = list(board.legal_moves)
        if not legal or board.is_game_over():
            break
        board.push(rng.choice(legal))
        kept += _same_input(board)
        plies += len(board.move_stack) + 1
    assert kept < plies  # the window is shorter than the games somewhere


@pytest.mark.parametrize("chess960", [False, True])
def test_castling_and_en_passant_games_encode_the_same(chess960: bool) -> None:
    for start, ucis in special_move_games(11, 12, chess960=chess960):
        root = chess.Board(start, chess960=chess960)
        board = root.copy()
        moves = [board.push_uci(u) or board.move_stack[-1] for u in ucis]
        for b in _every_prefix(root, moves):
            _same_input(b)


def test_a_long_game_replays_only_its_window() -> None:
    board = chess.Board()
    for _ in range(3):  # 24 plies of knight moves, then a pawn move 5 plies from the end
        for uci in ("g1f3", "g8f6", "f3g1", "f6g8") * 2:
            board.push_uci(uci)
    for uci in ("e2e4", "b8c6", "g1f3", "c6b8", "f3g1"):
        board.push_uci(uci)
    recent = PositionHistory.from_board(board, recent_only=True)
    # the 8th-last position is 2 plies before e2e4: its clock reaches back to the game's start
    assert len(recent) == len(board.move_stack) + 1
    board.push_uci("b8c6")
    board.push_uci("g1f3")
    board.push_uci("c6b8")  # now the 8th-last position is the one after e2e4 (rule50 0)
    recent = PositionHistory.from_board(board, recent_only=True)
    assert len(recent) == HISTORY_WINDOW + 1  # from one ply before e2e4
    _same_input(board)


def test_the_games_own_root_is_still_checked() -> None:
    board = chess.Board("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNP w Qkq - 0 1")  # pawn on h1
    for uci in ("g2g3", "g7g6", "b1c3", "b8c6") * 1 + ("c3b1", "c6b8", "b1c3", "b8c6") * 3:
        board.push_uci(uci)
    for recent in (False, True):
        with pytest.raises(PositionError, match="pawn on back rank"):
            PositionHistory.from_board(board, recent_only=recent)
