"""Opponent-aware play (issue 12 item 7): lc0's contempt options and WDL rescaling.

The oracle is lc0 0.32.1's binary with the same net: at one node both engines report the root's
evaluation after lc0's WDLRescale (search side) and its inverse (report side), so equal ``score``
and ``wdl`` prove the contempt value (``Contempt``/``UCI_Opponent``/``UCI_RatingAdv``), both
Elo models and the sign conventions.
"""

from __future__ import annotations

import chess
import chess.engine
import pytest

from lc0py.uci.contempt import contempt_side, contempt_value
from tests.uci.test_uci_chess960 import _lc0, _lc0py


def test_contempt_value_as_lc0_reads_it() -> None:
    assert contempt_value("", "", 35.0) == 35.0
    assert contempt_value("", "120", 35.0) == 120.0
    assert contempt_value("GM 2700 computer Stockfish 16", "50,stockfish=-300,komodo=10", 0.0) == -300.0
    assert contempt_value("human Magnus", "50,stockfish=-300", 0.0) == 50.0
    with pytest.raises(Exception, match="contempt"):
        contempt_value("", "a=b=c", 0.0)


def test_contempt_side() -> None:
    assert contempt_side("play", chess.BLACK, infinite=False, ponder=False) == chess.BLACK
    assert contempt_side("play", chess.BLACK, infinite=False, ponder=True) == chess.WHITE
    assert contempt_side("play", chess.WHITE, infinite=True, ponder=False) is None
    assert contempt_side("white_side_analysis", chess.BLACK, infinite=True, ponder=False) == chess.WHITE
    assert contempt_side("disable", chess.WHITE, infinite=False, ponder=False) is None


SETTINGS = [
    {},
    {"UCI_RatingAdv": 300},
    {"UCI_RatingAdv": 300, "WDLEvalObjectivity": 0},
    {
        "Contempt": "100,stock=-200",
        "UCI_Opponent": "none 1500 computer Stockfish",
        "WDLCalibrationElo": 2000,
        "WDLEvalObjectivity": 0,
    },
    {"Contempt": "250", "WDLDrawRateReference": 0.6, "WDLEvalObjectivity": 0.5},
]
POSITIONS = [[], ["e2e4"], ["e2e4", "e7e5"], ["d2d4", "g8f6", "c2c4"]]


def _node_stats(text: str) -> tuple[float, float, float]:
    """(WL, D, V) of VerboseMoveStats' ``node`` line."""
    wl = float(text.split("(WL:")[1].split(")")[0])
    d = float(text.split("(D:")[1].split(")")[0])
    v = float(text.split("(V:")[1].split(")")[0])
    return wl, d, v


def test_root_evaluation_matches_lc0() -> None:
    lc0 = _lc0()
    ours = _lc0py()
    try:
        for setting in SETTINGS:
            options = {"UCI_ShowWDL": True, "VerboseMoveStats": True, **setting}
            for engine in (lc0, ours):
                engine.configure(options)
            for moves in POSITIONS:
                board = chess.Board()
                for m in moves:
                    board.push_uci(m)
                got = []
                for engine in (lc0, ours):
                    info = engine.analyse(board, chess.engine.Limit(nodes=1), game=object())
                    got.append((info["score"], info.get("wdl"), _node_stats(info["string"])))
                assert got[0][:2] == got[1][:2], (setting, moves)
                # VerboseMoveStats' node line: the network's V as is, WL/D rescaled back as info
                # does (lc0 keeps WL in double, lc0py rounds through float32: 1e-5 apart at most).
                assert got[0][2] == pytest.approx(got[1][2], abs=2e-5), (setting, moves)
    finally:
        ours.quit()
        lc0.quit()
