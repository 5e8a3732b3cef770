"""``record_after`` (lc0's record of the next position from the bitboards alone, used by the
search for new leaves) must equal ``PositionHistory.push``'s record on random games."""

from __future__ import annotations

import random

import chess

from lc0py.chess.history import PositionHistory, record_after
from lc0py.chess.testing import oracle_positions


def _pack(move: chess.Move) -> int:
    return move.from_square | move.to_square << 6 | (move.promotion or 0) << 12


def _same(a, b) -> bool:  # type: ignore[no-untyped-def]
    return (a.pieces, a.castling, a.ep, a.turn, a.rule50, a.repetitions, a.key) == (
        b.pieces, b.castling, b.ep, b.turn, b.rule50, b.repetitions, b.key
    )  # fmt: skip


def test_record_after_equals_push_on_random_games() -> None:
    rng = random.Random(7)
    checked = 0
    for case in oracle_positions(seed=3, count=150):
        if case.chess960:
            continue
        history = PositionHistory.from_fen(case.fen, case.moves)
        for _ in range(60):
            moves = list(history.board.legal_moves)
            if not moves:
                break
            # every legal move from here, then continue the game with a random one
            for move in moves:
                records = list(history.records)
                got = record_after(records[-1], _pack(move), records)
                history.push(move)
                assert _same(got, history.records[-1]), (history.board.fen(), move.uci())
                history.pop()
                checked += 1
            history.push(rng.choice(moves))
    assert checked > 10000
