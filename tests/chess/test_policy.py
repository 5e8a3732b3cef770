"""The 1858-move policy index (docs/input-encoding.md §5, §6): order, anchors, colours, transforms."""

from __future__ import annotations

import random

import chess
import numpy as np
import pytest

from lc0py.chess import (
    ATTENTION_POLICY_MAP,
    POLICY_MOVES,
    PositionHistory,
    index_to_move,
    legal_moves_with_indices,
    move_to_index,
)
from lc0py.chess.policy import king_takes_rook_uci
from lc0py.chess.transforms import SQUARE_MAPS

# §5.1: first index of each from-square, a1 … h8.
START_OFFSETS = [
    0, 23, 47, 72, 97, 122, 147, 171, 194, 218, 245, 274, 303, 332, 361, 388, 412, 437, 466, 499,
    532, 565, 598, 627, 652, 677, 706, 739, 774, 809, 842, 871, 896, 921, 950, 983, 1018, 1053,
    1086, 1115, 1140, 1165, 1194, 1227, 1260, 1293, 1326, 1355, 1380, 1404, 1431, 1460, 1489, 1518,
    1547, 1574, 1598, 1621, 1645, 1670, 1695, 1720, 1745, 1769,
]  # fmt: skip

# §5.2 (frame moves).
ANCHORS = {
    "a1b1": 0, "a1h8": 22, "b1a1": 23, "b1c3": 36, "e1a1": 97, "e1c1": 99, "e1g1": 102,
    "e1h1": 103, "g1f3": 159, "c2c4": 264, "d2d4": 293, "e2e4": 322, "a7a8": 1401,
    "a7a8q": 1792, "a7a8r": 1793, "a7a8b": 1794, "a7b8q": 1795, "b7a8q": 1798, "b7c8b": 1806,
    "d7d8q": 1819, "e7d8r": 1826, "g7h8q": 1849, "h7g8q": 1852, "h7g8r": 1853, "h7g8b": 1854,
    "h7h8q": 1855, "h7h8r": 1856, "h7h8b": 1857, "h8g8": 1791, "e7e5": 1498,
}  # fmt: skip


def test_size_and_uniqueness() -> None:
    assert len(POLICY_MOVES) == 1858
    assert len(set(POLICY_MOVES)) == 1858
    assert sum(len(m) == 5 for m in POLICY_MOVES) == 66


def test_start_offsets() -> None:
    firsts: dict[str, int] = {}
    for i, m in enumerate(POLICY_MOVES[:1792]):
        firsts.setdefault(m[:2], i)
    assert [firsts[chess.square_name(s)] for s in range(64)] == START_OFFSETS


@pytest.mark.parametrize("move,index", sorted(ANCHORS.items()))
def test_anchor(move: str, index: int) -> None:
    assert POLICY_MOVES[index] == move


def test_attention_map() -> None:
    assert ATTENTION_POLICY_MAP.shape == (1858,)
    assert len(set(ATTENTION_POLICY_MAP.tolist())) == 1858
    assert ATTENTION_POLICY_MAP[322] == chess.E2 * 64 + chess.E4
    assert ATTENTION_POLICY_MAP[1401] == chess.A7 * 64 + chess.A8  # knight promotion: plain entry
    assert ATTENTION_POLICY_MAP[1792] == 4096  # a7a8q
    assert ATTENTION_POLICY_MAP[1857] == 4096 + 7 * 24 + 7 * 3 + 2  # h7h8b
    assert ATTENTION_POLICY_MAP.max() < 4288


def _idx(fen: str, uci: str, t: int = 0, compat: bool = False) -> int:
    board = chess.Board(fen)
    move = board.parse_uci(uci)
    return move_to_index(move, board, t, lc0_032_transpose_compat=compat)


START = chess.STARTING_FEN


def test_colours_mirror() -> None:
    assert _idx(START, "e2e4") == 322
    assert _idx(START, "g1f3") == 159
    black = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"
    assert _idx(black, "e7e5") == 322
    assert _idx(black, "g8f6") == 159


@pytest.mark.parametrize(
    "fen,uci,index",
    [
        ("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1", "e1g1", 103),  # O-O: king takes rook
        ("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1", "e1h1", 103),  # same move, Chess960 spelling
        ("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1", "e1c1", 97),  # O-O-O
        ("r3k2r/8/8/8/8/8/8/R3K2R b KQkq - 0 1", "e8g8", 103),  # Black mirrored
        ("r3k2r/8/8/8/8/8/8/R3K2R b KQkq - 0 1", "e8c8", 97),
        ("r3k2r/8/8/8/8/8/8/R3K2R w - - 0 1", "e1f1", 101),  # plain king move
    ],
)
def test_castling(fen: str, uci: str, index: int) -> None:
    assert _idx(fen, uci) == index


@pytest.mark.parametrize(
    "fen,uci,index",
    [
        ("1n5k/P7/8/8/8/8/8/K7 w - - 0 1", "a7a8q", 1792),
        ("1n5k/P7/8/8/8/8/8/K7 w - - 0 1", "a7a8r", 1793),
        ("1n5k/P7/8/8/8/8/8/K7 w - - 0 1", "a7a8b", 1794),
        ("1n5k/P7/8/8/8/8/8/K7 w - - 0 1", "a7a8n", 1401),  # knight promotion = plain move
        ("1n5k/P7/8/8/8/8/8/K7 w - - 0 1", "a7b8q", 1795),
        ("1n5k/P7/8/8/8/8/8/K7 w - - 0 1", "a7b8n", POLICY_MOVES.index("a7b8")),
        ("k7/8/8/8/8/8/p7/7K b - - 0 1", "a2a1q", 1792),  # Black: a2a1 is a7a8 in the frame
        ("k7/8/8/8/8/8/p7/7K b - - 0 1", "a2a1b", 1794),
        ("k7/8/8/8/8/8/p7/7K b - - 0 1", "a2a1n", 1401),
    ],
)
def test_promotions(fen: str, uci: str, index: int) -> None:
    assert _idx(fen, uci) == index


T7 = "3r4/4k3/8/1K6/8/8/8/8 w - - 0 1"  # transform 7 (§4 anchor)
T4 = "8/8/8/8/8/8/8/3k2K1 w - - 0 1"  # any board: transforms only map squares
T_ANY = "8/8/8/8/8/8/8/k3K3 w - - 0 1"


@pytest.mark.parametrize(
    "fen,uci,t,index",
    [
        (T7, "b5c5", 7, 317),  # -> e2e3
        (T7, "b5a6", 7, 306),  # -> e2f1
        (T_ANY, "e1e2", 4, 885),  # -> h4g4
        (T4, "g1f1", 4, move_to_index(chess.Move(chess.H2, chess.H3), chess.Board(), 0)),
        (T_ANY, "e1e2", 1, 81),  # -> d1d2
    ],
)
def test_transform_examples(fen: str, uci: str, t: int, index: int) -> None:
    assert _idx(fen, uci, t) == index


def test_transform_example_g1f3() -> None:
    board = chess.Board("8/8/8/8/8/8/8/k5N1 w - - 0 1")
    assert move_to_index(chess.Move(chess.G1, chess.F3), board, 4) == 398  # -> h2f3


@pytest.mark.parametrize(
    "fen,uci,t,index",
    [
        (T7, "b5c5", 7, 857),  # lc0 >= 0.32 reads g4f4
        ("8/8/8/8/8/8/8/k5N1 w - - 0 1", "g1f3", 4, 1632),  # lc0 >= 0.32 reads b8c6
        (T_ANY, "e1e2", 1, 81),  # no TRANSPOSE: the maps agree
    ],
)
def test_lc0_032_compat(fen: str, uci: str, t: int, index: int) -> None:
    assert _idx(fen, uci, t, compat=True) == index


def _random_boards(seed: int, count: int) -> list[chess.Board]:
    rng = random.Random(seed)
    boards = []
    for fen in [
        None,
        "8/PPP3k1/8/8/8/8/5ppp/K7 w - - 0 1",
        "r3k2r/pppq1ppp/2npbn2/2b1p3/2B1P3/2NPBN2/PPPQ1PPP/R3K2R w KQkq - 4 8",
        "1n1r1q2/P1P1P1Pk/8/8/8/8/1p1p1p1p/K1R1Q1N1 w - - 0 1",
        "r7/8/8/3k4/8/8/2NK1B2/7Q w - - 0 1",  # pawnless: all 8 transforms
        "8/1q6/8/3k4/8/8/2RK4/8 b - - 0 1",
    ]:
        for _ in range(count):
            board = chess.Board() if fen is None else chess.Board(fen)
            for _ in range(rng.randrange(0, 60)):
                moves = list(board.legal_moves)
                if not moves:
                    break
                board.push(rng.choice(moves))
            boards.append(board)
    return boards


@pytest.mark.parametrize("compat", [False, True], ids=["consistent", "lc0-032"])
def test_round_trip_all_legal_moves(compat: bool) -> None:
    checked = 0
    for board in _random_boards(11, 25):
        # With pawns lc0 only ever chooses FLIP; other transforms would send promotions off-table.
        for t in range(2) if board.pawns else range(8):
            moves, idx = legal_moves_with_indices(board, t, lc0_032_transpose_compat=compat)
            assert len(set(idx.tolist())) == len(moves)  # injective
            assert (idx >= 0).all()
            for move, i in zip(moves, idx.tolist(), strict=True):
                assert move_to_index(move, board, t, lc0_032_transpose_compat=compat) == i
                assert index_to_move(i, board, t, lc0_032_transpose_compat=compat) == move
                checked += 1
    assert checked > 5_000


def test_transform_that_lc0_never_chooses_raises() -> None:
    board = chess.Board("1n5k/P7/8/8/8/8/8/K7 w - - 0 1")
    with pytest.raises(ValueError, match="no lc0 policy index"):
        legal_moves_with_indices(board, 2)


def test_chess960_castling() -> None:
    board = chess.Board("4k3/8/8/8/8/8/8/1R2K1R1 w KQ - 0 1", chess960=True)
    moves, idx = legal_moves_with_indices(board)
    castles = {m.uci(): i for m, i in zip(moves, idx.tolist(), strict=True) if board.is_castling(m)}
    assert castles == {"e1g1": POLICY_MOVES.index("e1g1"), "e1b1": POLICY_MOVES.index("e1b1")}
    for m, i in zip(moves, idx.tolist(), strict=True):
        assert index_to_move(i, board) == m


def test_transform_is_plane_consistent() -> None:
    """Index of a move under t == index of the physically transformed move on the transformed board."""
    board = chess.Board(T7)
    history = PositionHistory.from_fen(T7)
    t = history.encode(3, "no").transform
    assert t == 7
    for move in board.legal_moves:
        frm, to = SQUARE_MAPS[t][move.from_square], SQUARE_MAPS[t][move.to_square]
        assert move_to_index(move, board, t) == POLICY_MOVES.index(
            chess.square_name(frm) + chess.square_name(to)
        )


def test_index_to_move_errors() -> None:
    with pytest.raises(ValueError):
        index_to_move(1858, chess.Board())
    assert index_to_move(322, chess.Board()) == chess.Move.from_uci("e2e4")
    assert isinstance(legal_moves_with_indices(chess.Board())[1], np.ndarray)


def test_move_without_index() -> None:
    with pytest.raises(ValueError):
        move_to_index(chess.Move(chess.A1, chess.B4), chess.Board("8/8/8/8/8/8/8/R3K2k w - - 0 1"))


def test_king_takes_rook_uci() -> None:
    board = chess.Board("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1")
    assert king_takes_rook_uci(board, chess.Move.from_uci("e1g1")) == "e1h1"
    assert king_takes_rook_uci(board, chess.Move.from_uci("e1c1")) == "e1a1"
    assert king_takes_rook_uci(board, chess.Move.from_uci("a1b1")) == "a1b1"
    board.push_uci("a1b1")
    assert king_takes_rook_uci(board, chess.Move.from_uci("e8g8")) == "e8h8"
