"""lc0's backend-dependent search defaults, the node limit's overshoot, and Chess960 castling in
VerboseMoveStats (issue 29, item 5)."""

from __future__ import annotations

import chess

from lc0py.backends.base import BackendInfo
from lc0py.chess.policy import king_takes_rook_uci
from lc0py.search.params import SearchParams, effective_params
from lc0py.search.worker import batches_in_flight, minibatch_target

CPU = BackendInfo(input_format=1, has_wdl=True, has_moves_left=False, recommended_batch=32,
                  runs_on_cpu=True, search_minibatch=7)
GPU = BackendInfo(input_format=1, has_wdl=True, has_moves_left=False, recommended_batch=256)


def test_cpu_backend_gets_lc0s_cpu_defaults() -> None:
    p = effective_params(SearchParams(), CPU)
    assert (p.threads, p.overlap, p.minibatch_size) == (1, False, 7)
    assert minibatch_target(p, CPU) == 7 and batches_in_flight(p) == 1


def test_user_values_and_gpu_backends_are_kept() -> None:
    user = SearchParams(threads=3, minibatch_size=64)
    assert effective_params(user, CPU) is user
    default = SearchParams()
    assert effective_params(default, GPU) is default
    assert batches_in_flight(default) == 2 and minibatch_target(default, GPU) == 256


def test_numpy_backend_declares_lc0s_eigen_defaults() -> None:
    from lc0py.backends.numpy_backend import LC0_EIGEN_MINIBATCH, NumpyBackend
    from lc0py.weights import random_network

    info = NumpyBackend(random_network("tiny", seed=47)).info
    assert info.runs_on_cpu and info.search_minibatch == LC0_EIGEN_MINIBATCH == 7


def test_chess960_castling_is_written_as_it_is() -> None:
    board = chess.Board("1rk3r1/pppppppp/8/8/8/8/PPPPPPPP/1RK3R1 b GBgb - 0 1", chess960=True)
    castles = {m.uci(): king_takes_rook_uci(board, m) for m in board.legal_moves if board.is_castling(m)}
    assert castles == {"c8b8": "c8b8", "c8g8": "c8g8"}
    board = chess.Board("2r1k2r/pppppppp/8/8/8/8/PPPPPPPP/2R1K2R b HChc - 0 1", chess960=True)
    castles = {m.uci(): king_takes_rook_uci(board, m) for m in board.legal_moves if board.is_castling(m)}
    assert castles["e8c8"] == "e8c8"  # lc0 prints e8c8 (the rook is on c8), not e8a8
    standard = chess.Board("r3k2r/pppppppp/8/8/8/8/PPPPPPPP/R3K2R b KQkq - 0 1")
    assert king_takes_rook_uci(standard, chess.Move.from_uci("e8c8")) == "e8a8"  # lc0's standard form
