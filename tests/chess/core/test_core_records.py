"""The compiled FEN/move/planes path against lc0py's Python encoder (the oracle) and the API's
legal-move policy; bad records get the right error and never a position."""

from __future__ import annotations

import random

import chess
import numpy as np
import pytest

from lc0py.api.evaluation import legal_policy
from lc0py.chess import PositionHistory
from lc0py.chess.core import records as compiled
from lc0py.chess.core.record_batch import encode_records, error_text, line_spans
from lc0py.chess.core.uci import uci_table
from lc0py.chess.policy import move_to_index


def _random_lines(seed: int, games: int) -> list[str]:
    rng = random.Random(seed)
    lines = []
    for _ in range(games):
        board = chess.Board()
        moves: list[str] = []
        for _ in range(rng.randint(0, 90)):
            legal = list(board.legal_moves)
            if not legal:
                break
            # promotions, castling and en passant come more often than by chance
            special = [m for m in legal if m.promotion or board.is_castling(m) or board.is_en_passant(m)]
            move = rng.choice(special) if special and rng.random() < 0.5 else rng.choice(legal)
            board.push(move)
            moves.append(move.uci())
        k = rng.randint(0, len(moves))
        start = chess.Board()
        for u in moves[:k]:
            start.push_uci(u)
        lines.append(f"{start.fen()} | {' '.join(moves[k:])}")
        lines.append(board.fen())
        lines.append("startpos | " + " ".join(moves))
    return lines


def _reference(line: str, fmt: int, fill: str):  # type: ignore[no-untyped-def]
    fen, _, moves = line.partition("|")
    fen = fen.strip()
    return PositionHistory.from_fen(chess.STARTING_FEN if fen == "startpos" else fen, moves.split()).encode(
        fmt, fill
    )


@pytest.mark.parametrize(
    "fmt, fill", [(1, "fen_only"), (3, "always"), (4, "no"), (5, "fen_only"), (133, "always")]
)
def test_planes_equal_the_python_encoder(fmt: int, fill: str) -> None:
    lines = _random_lines(fmt, 25)
    buf = ("\n".join(lines) + "\n").encode()
    starts, ends = line_spans(buf)
    enc = encode_records(
        buf, starts, ends, all_plies=False, capacity=len(lines), input_format=fmt, history_fill=fill
    )
    assert (enc.status == 0).all() and len(enc) == len(lines)
    for i, line in enumerate(lines):
        ref = _reference(line, fmt, fill)
        assert np.array_equal(enc.planes.masks[i], ref.masks), line
        assert np.array_equal(enc.planes.values[i], ref.values), line
        assert int(enc.transform[i]) == ref.transform


def test_every_ply_of_a_game() -> None:
    line = _random_lines(9, 1)[2]  # startpos | moves
    buf = line.encode()
    starts, ends = line_spans(buf)
    moves = line.split("|")[1].split()
    enc = encode_records(buf, starts, ends, all_plies=True, capacity=len(moves) + 1, input_format=4)
    assert len(enc) == len(moves) + 1 and enc.ply.tolist() == list(range(len(moves) + 1))
    for k in range(len(moves) + 1):
        ref = PositionHistory.from_fen(chess.STARTING_FEN, moves[:k]).encode(4)
        assert np.array_equal(enc.planes.masks[k], ref.masks)


def test_top_k_policy_equals_the_api() -> None:
    lines = _random_lines(4, 10)
    buf = "\n".join(lines).encode()
    starts, ends = line_spans(buf)
    enc = encode_records(buf, starts, ends, all_plies=False, capacity=len(lines), input_format=1)
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(len(enc), 1858)).astype(np.float32)
    k = compiled.B.MAX_MOVES
    moves = np.empty((len(enc), k), np.int32)
    probs = np.empty((len(enc), k), np.float32)
    legal = np.empty(len(enc), np.int32)
    compiled.summarise_rows(enc.pos, enc.transform, logits, k, moves, probs, legal)
    table = uci_table()
    for i, line in enumerate(lines):
        history = PositionHistory.from_fen(*_fen_moves(line))
        board = history.board
        encoded = history.encode(1)
        legal_moves = list(board.legal_moves)
        idx = [move_to_index(m, board, encoded.transform) for m in legal_moves]
        ref = legal_policy(legal_moves, logits[i, idx])
        got = {table[m]: float(p) for m, p in zip(moves[i], probs[i], strict=True) if m >= 0}
        assert legal[i] == len(ref) and set(got) == {m.uci() for m in ref}
        for move, p in ref.items():
            assert got[move.uci()] == pytest.approx(p, rel=1e-6, abs=1e-9)
        assert list(got.values()) == sorted(got.values(), reverse=True)


def _fen_moves(line: str) -> tuple[str, list[str]]:
    fen, _, moves = line.partition("|")
    fen = fen.strip()
    return (chess.STARTING_FEN if fen == "startpos" else fen), moves.split()


@pytest.mark.parametrize(
    "line, error",
    [
        ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBN w KQkq - 0 1", "bad piece placement"),
        ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR x KQkq - 0 1", "bad side to move"),
        ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQ1BNR w KQkq - 0 1", "needs exactly one king"),
        ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq e3 0 1", "bad en passant square"),
        ("4k3/8/8/8/8/8/8/4K2R w Kq - 0 1", "castling right without its king or rook"),
        ("4k3/8/8/8/8/8/8/P3K3 w - - 0 1", "pawn on the first or last rank"),
        ("4k3/8/8/8/8/8/8/4K2R b - - 0 1 | e8e7", ""),
        ("4k2R/8/8/8/8/8/8/4K3 w - - 0 1", "the side not to move is in check"),
        ("startpos | e2e4 e7e5 e1e3", "illegal move (move 3)"),
        ("startpos | e2e4 zz", "bad move text (move 2)"),
        ("startpos | e2e4 | e7e5", "more than one '|'"),
        (" | e2e4", "missing FEN"),
    ],
)
def test_bad_records_are_named(line: str, error: str) -> None:
    buf = f"# a comment\n\n{line}\n".encode()
    starts, ends = line_spans(buf)
    enc = encode_records(buf, starts, ends, all_plies=False, capacity=3, input_format=1)
    assert enc.status[0] == compiled.SKIPPED and enc.status[1] == compiled.SKIPPED
    if error:
        assert enc.status[2] > 0 and error_text(int(enc.status[2]), int(enc.err_arg[2])).startswith(error)
        assert len(enc) == 0
    else:
        assert enc.status[2] == 0 and len(enc) == 1


def test_epd_opcodes_and_missing_fields() -> None:
    lines = [
        'rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - hmvc 3; fmvn 7; id "x";',
        "4k3/8/8/8/8/8/8/4K3",
    ]
    buf = "\n".join(lines).encode()
    starts, ends = line_spans(buf)
    enc = encode_records(buf, starts, ends, all_plies=False, capacity=2, input_format=4)
    assert (enc.status == 0).all()
    ref = PositionHistory.from_fen("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 3 7").encode(4)
    assert np.array_equal(enc.planes.values[0], ref.values) and np.array_equal(enc.planes.masks[0], ref.masks)
    ref = PositionHistory.from_fen("4k3/8/8/8/8/8/8/4K3 w - - 0 1").encode(4)
    assert np.array_equal(enc.planes.masks[1], ref.masks)
