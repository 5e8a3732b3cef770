"""``info`` lines as lc0 prints them (docs/uci-and-tools.md §5): score, wdl, movesleft, nps, pv.

The score follows lc0's default ``ScoreType`` WDL_mu: the WDL is turned into a logistic mean
``mu`` (and ``wl``/``d`` are rewritten with lc0's fast math), reported as ``100·mu`` centipawns
when that is meaningful, else the ``45·tan(1.567·wl)`` fallback. Other ScoreTypes are supported.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import chess
import numpy as np

from lc0py.search.fastmath import fast_log, fast_logistic
from lc0py.search.search import PvLine, SearchInfo

_F = np.float32


@dataclass
class Score:
    """What ``score`` prints: ``kind`` is "cp" or "mate"; ``wl``/``d`` after the WDL rewrite."""

    kind: str
    value: int
    wl: float
    d: float


def wdl_mu(wl: float, d: float) -> tuple[float, float, float]:
    """``(mu, wl', d')``: lc0's WDL_mu with its fast-math rewrite (§5.1); ``mu = 0`` if undefined."""
    w = (1.0 + wl - d) / 2.0
    lo = (1.0 - wl - d) / 2.0
    if not all(0.0001 < x < 0.9999 for x in (w, d, lo)):
        return 0.0, wl, d
    a = fast_log(float(_F(1.0) / _F(lo) - _F(1.0)))
    b = fast_log(float(_F(1.0) / _F(w) - _F(1.0)))
    if a + b == 0.0:
        return 0.0, wl, d
    mu = float(_F(a - b) / _F(a + b))
    s = float(_F(2.0) / _F(a + b))
    w2 = fast_logistic(float(_F(-1.0 + mu) / _F(s)))
    l2 = fast_logistic(float(_F(-1.0 - mu) / _F(s)))
    return mu, float(_F(w2) - _F(l2)), max(0.0, float(_F(1.0) - _F(w2) - _F(l2)))


def _trunc(x: float) -> int:
    if not math.isfinite(x):
        return 0
    return int(x)  # C++ float -> int truncation


def compute_score(
    line: PvLine, score_type: str = "WDL_mu", has_wdl: bool = True, draw_score: float = 0.0
) -> Score:
    """The ``score`` of one PV line (values from the root side to move)."""
    wl, d = line.wl, line.d
    if line.mate is not None:
        return Score("mate", line.mate, wl, d)
    if score_type == "WDL_mu":
        mu, wl, d = wdl_mu(wl, d)
        cp = 45.0 * math.tan(1.56728071628 * wl)
        if has_wdl and mu != 0.0 and abs(wl) + d < 0.996 and (abs(mu) < 1 or abs(cp) < abs(100 * mu)):
            return Score("cp", _trunc(100 * mu), wl, d)
        return Score("cp", _trunc(cp), wl, d)
    if score_type == "centipawn":
        v = 90 * math.tan(1.5637541897 * wl)
    elif score_type == "centipawn_with_drawscore":
        v = 90 * math.tan(1.5637541897 * (wl + draw_score * d))
    elif score_type == "centipawn_2019":
        v = 295 * wl / (1 - 0.976953126 * wl**14)
    elif score_type == "centipawn_2018":
        v = 290.680623072 * math.tan(1.548090806 * wl)
    elif score_type == "win_percentage":
        v = 5000 * wl + 5000
    elif score_type == "Q":
        v = 10000 * (wl + draw_score * d)
    else:  # "W-L"
        v = 10000 * wl
    return Score("cp", _trunc(v), wl, d)


def _round_half_away(x: float) -> int:
    return int(math.floor(x + 0.5)) if x >= 0 else -int(math.floor(-x + 0.5))


def wdl_permille(wl: float, d: float) -> tuple[int, int, int]:
    """``wdl w d l`` in permille (§5.1)."""
    w = max(0, _round_half_away(500 * (1 + wl - d)))
    lo = max(0, _round_half_away(500 * (1 - wl - d)))
    dd = 1000 - w - lo
    if dd < 0:
        half = int(dd / 2)  # C++ division truncates toward zero
        w = min(1000, max(0, w + half))
        lo = 1000 - w
        dd = 0
    return w, dd, lo


def uci_move(move: chess.Move, board: chess.Board | None = None, chess960: bool = False) -> str:
    """UCI text; castling as king-takes-rook with ``chess960`` (needs the board)."""
    if chess960 and board is not None and board.is_castling(move):
        if not board.chess960 and chess.square_distance(move.from_square, move.to_square) == 2:
            rook_file = 7 if move.to_square > move.from_square else 0
            to = chess.square(rook_file, chess.square_rank(move.from_square))
            return chess.Move(move.from_square, to).uci()
    return move.uci()


def pv_text(moves: list[chess.Move], board: chess.Board | None, chess960: bool) -> str:
    if not chess960 or board is None:
        return " ".join(m.uci() for m in moves)
    b = board.copy(stack=False)
    out = []
    for m in moves:
        out.append(uci_move(m, b, True))
        b.push(m)
    return " ".join(out)


@dataclass
class InfoFormat:
    """Output settings from the UCI options."""

    score_type: str = "WDL_mu"
    show_wdl: bool = False
    show_movesleft: bool = False
    has_wdl: bool = True
    has_moves_left: bool = False
    draw_score: float = 0.0
    chess960: bool = False
    show_hashfull: bool = False


def info_lines(info: SearchInfo, fmt: InfoFormat, board: chess.Board | None = None) -> list[str]:
    """One ``info`` line per PV (MultiPV), fields in lc0's order."""
    out = []
    lines = info.lines or [PvLine([], 0.0, 0.0, 0.0, 0)]
    multi = len(lines) > 1
    for k, line in enumerate(lines, 1):
        parts = [f"info depth {info.depth} seldepth {info.seldepth} time {info.time_ms} nodes {info.nodes}"]
        score = compute_score(line, fmt.score_type, fmt.has_wdl, fmt.draw_score)
        parts.append(f"score {score.kind} {score.value}")
        if fmt.show_wdl:
            w, d, lo = wdl_permille(score.wl, score.d)
            parts.append(f"wdl {w} {d} {lo}")
        if fmt.show_movesleft and fmt.has_moves_left:
            parts.append(f"movesleft {int((1 + line.m) / 2)}")
        if fmt.show_hashfull:
            parts.append(f"hashfull {info.cache_fill_permille}")
        if info.nps is not None:
            parts.append(f"nps {info.nps}")
        parts.append("tbhits 0")
        if multi:
            parts.append(f"multipv {k}")
        if line.moves:
            parts.append("pv " + pv_text(line.moves, board, fmt.chess960))
        out.append(" ".join(parts))
    return out
