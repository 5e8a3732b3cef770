"""The public API on a GPU backend (marked ``gpu``, skipped without one): ``evaluate_many`` and
``trace``'s device activations against the numpy reference, with the accuracy module's rule."""

from __future__ import annotations

import chess
import numpy as np
import pytest

import lc0py
from lc0py.backends.accuracy import relative_error, tolerance
from lc0py.weights.presets import random_network
from tests.nvidia import require_nvidia_gpu

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def network():  # type: ignore[no-untyped-def]
    require_nvidia_gpu()
    return random_network("t82", 5, layers=2)


def _boards(seed: int, count: int) -> list[chess.Board]:
    rng = np.random.default_rng(seed)
    boards = []
    for _ in range(count):
        board = chess.Board()
        for _ in range(int(rng.integers(2, 30))):
            moves = list(board.legal_moves)
            if not moves:
                break
            board.push(moves[int(rng.integers(len(moves)))])
        boards.append(board)
    return boards


@pytest.mark.parametrize("backend, fp16", [("cuda", False), ("cuda-fp16", True)])
def test_evaluate_many_and_trace_match_the_reference(network, backend: str, fp16: bool) -> None:  # type: ignore[no-untyped-def]
    boards = _boards(int(np.random.default_rng().integers(1 << 30)), 12)  # fresh positions each run
    limit = tolerance(fp16)
    with lc0py.load(network, backend="numpy", options="precision=fp64") as ref, \
            lc0py.load(network, backend=backend) as net:
        want, got = ref.evaluate_many(boards), net.evaluate_many(boards)
        for w, g in zip(want, got, strict=True):
            moves = list(w.policy)
            assert set(g.policy) == set(moves)
            p_w = np.array([w.policy[m] for m in moves])
            p_g = np.array([g.policy[m] for m in moves])
            assert np.isfinite(p_g).all() and relative_error(p_g, p_w) <= limit
            assert relative_error(np.array(g.wdl), np.array(w.wdl)) <= limit
        trace = net.trace(boards[-1])
    common = set(trace.device_activations) & set(trace.activations)
    assert "embedding" in common and any(k.endswith(".attention") for k in common), sorted(common)
    for key in sorted(common):
        dev, host = trace.device_activations[key], trace.activations[key]
        assert dev.shape == host.shape, key
        assert np.isfinite(dev).all() and relative_error(dev, host) <= limit, key
