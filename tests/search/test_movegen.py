"""The search's packed-int move generator agrees with python-chess and lc0py.chess.policy."""

from __future__ import annotations

import random

import chess

from lc0py.chess.policy import legal_moves_with_indices
from lc0py.search.movegen import legal_moves_indexed, pack, to_move

STARTS = [
    chess.STARTING_FEN,
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 10",  # kiwipete
    "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 11",
    "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1",
    "rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8",
    "8/P1k5/8/8/8/8/1p4K1/8 w - - 0 1",
    "4k3/8/8/2pP4/8/8/8/4K2R w K c6 0 2",
]


def _compare(board: chess.Board) -> None:
    moves, idx = legal_moves_indexed(board, 0)
    ref_moves, ref_idx = legal_moves_with_indices(board, 0)
    got = {to_move(m): int(i) for m, i in zip(moves, idx, strict=True)}
    ref = {m: int(i) for m, i in zip(ref_moves, ref_idx, strict=True)}
    assert got == ref, board.fen()
    assert len(moves) == len(set(moves))


def test_random_games_match_python_chess() -> None:
    rng = random.Random(1)
    positions = 0
    for fen in STARTS:
        for _ in range(25):
            board = chess.Board(fen)
            for _ply in range(80):
                _compare(board)
                positions += 1
                legal = list(board.legal_moves)
                if not legal:
                    break
                board.push(rng.choice(legal))
    assert positions > 5000


def test_pack_round_trip() -> None:
    for uci in ("e2e4", "a7a8q", "h2h1n", "e1g1"):
        m = chess.Move.from_uci(uci)
        assert to_move(pack(m)) == m
