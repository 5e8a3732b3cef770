"""Backend conformance suite: any ``Backend`` against the numpy float64 reference.

Reuse from a backend's tests::

    from tests.backends.conformance import RTOL_FP16, check_backend_against_reference
    errors = check_backend_against_reference(backend, network, RTOL_FP16)

Positions are fresh random games (random legal playouts from the start position and from a few
FENs with castling/en passant/promotion chances), encoded for the backend's input format with
``lc0py.chess``; a new seed is drawn per call and printed in the failure message, so a failure
can be reproduced with ``seed=``. Errors are relative norms ``||a - b|| / ||b||`` per output
(policy logits, W/D/L, moves-left when the net has it). NaN or inf anywhere fails.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from lc0py.backends.accuracy import RTOL_FP16, RTOL_FP32, relative_error
from lc0py.backends.accuracy import output_errors as compare_outputs
from lc0py.backends.base import PlanesBatch
from lc0py.chess import PositionHistory, encode_batch
from lc0py.chess.testing import random_games
from lc0py.model import cast_network, forward

# one metric and one tolerance rule for the whole project (re-exported for the backend tests)
__all__ = ["RTOL_FP16", "RTOL_FP32", "check_backend_against_reference", "random_batch", "relative_error"]



@dataclass
class ConformanceReport:
    seed: int
    batch: int
    errors: dict[str, float]

    def __str__(self) -> str:
        errs = ", ".join(f"{k} {v:.3g}" for k, v in self.errors.items())
        return f"seed={self.seed} batch={self.batch}: {errs}"


def random_positions(n: int, seed: int, max_plies: int = 80) -> list[PositionHistory]:
    """``n`` games from random legal playouts (deterministic for a seed), never finished ones."""
    return random_games(n, seed, max_plies)


def random_batch(n: int, input_format: int, seed: int) -> PlanesBatch:
    """``n`` random positions encoded for ``input_format``."""
    return encode_batch([h.encode(input_format) for h in random_positions(n, seed)])


def check_named_backend(
    name: str, network: Any, rtol: float, options: str = "", batch_sizes: tuple[int, ...] = (1, 7)
) -> list[ConformanceReport]:
    """``check_backend_against_reference`` on the backend ``name`` created from ``network`` with
    ``options`` (closed afterwards)."""
    from lc0py.backends.registry import create_backend

    backend = create_backend(name, network, options)
    try:
        return check_backend_against_reference(backend, network, rtol, batch_sizes)
    finally:
        backend.close()


def traced_reference(network: Any, n: int = 9) -> tuple[PlanesBatch, Any, dict[str, np.ndarray]]:
    """``(batch, output, trace)``: ``n`` fresh random positions (a new seed per call) and the
    float64 reference forward pass on them with its per-layer trace, for a backend's traced run."""
    batch = random_batch(n, int(network.format.input), seed=int(np.random.default_rng().integers(1 << 30)))
    trace: dict[str, np.ndarray] = {}
    output = forward(cast_network(network, np.float64), batch.dense(np.float64), np.float64, trace=trace)
    return batch, output, trace


def check_backend_against_reference(
    backend: Any,
    network: Any,
    rtol: float,
    batch_sizes: tuple[int, ...] = (1, 7),
    seed: int | None = None,
) -> list[ConformanceReport]:
    """Evaluate fresh random positions with ``backend`` and the float64 reference; assert errors ≤ ``rtol``.

    ``network`` is the ``Network`` the backend was created from (same selected heads). Returns
    the reports (one per batch size) so callers can print or record them.
    """
    if seed is None:
        seed = int.from_bytes(os.urandom(4), "little")
    net64 = cast_network(network, np.float64)
    has_mlh = network.moves_left is not None
    reports = []
    for k, size in enumerate(batch_sizes):
        batch = random_batch(size, backend.info.input_format, seed + k)
        planes = batch.dense(np.float64)
        assert np.any(planes), "input planes are all zero"
        ref = forward(net64, planes, np.float64)
        out = backend.evaluate(batch)
        assert len(out) == size, f"backend returned {len(out)} positions for a batch of {size}"
        report = ConformanceReport(seed + k, size, compare_outputs(out, ref, has_mlh))
        reports.append(report)
        bad = {name: err for name, err in report.errors.items() if not err <= rtol}
        assert not bad, f"{getattr(backend, 'name', backend)}: relative error above {rtol}: {report}"
    return reports
