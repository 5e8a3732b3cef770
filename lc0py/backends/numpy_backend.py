"""``numpy`` backend: the reference forward pass (``lc0py.model``) behind the backend interface.

Runs attention-body and residual (SE-ResNet) networks alike.

Slow but exact; useful everywhere a GPU is absent and as the yardstick for other backends.
Options (``--backend-opts``): ``precision=fp32|fp64`` (default ``fp32``). With ``fp64`` the
weights are converted to float64 once at creation, not per batch. ``threads=N``: BLAS threads per
evaluation (default 1 as lc0's CPU backends, or ``$LC0PY_BLAS_THREADS``; 0 = the BLAS library's
choice, a thread per core: see ``lc0py.backends.blas_threads``).
"""

from __future__ import annotations

import numpy as np

from lc0py.backends.base import BackendBase, BackendInfo, NetworkOutput, PlanesBatch
from lc0py.backends.blas_threads import blas_limit, blas_threads
from lc0py.backends.options import BackendOptions
from lc0py.model.forward import cast_network, forward
from lc0py.weights.network import Network
from lc0py.weights.residual import ResidualNetwork

PRECISIONS: dict[str, type] = {"fp32": np.float32, "fp64": np.float64}
KNOWN_OPTIONS = ("precision", "threads")
# lc0's eigen backend (the CPU backend lc0 0.32.1 ships, its numpy counterpart): recommended
# minibatch 7, one search thread; lc0py's numpy search uses the same defaults (issue 29)
LC0_EIGEN_MINIBATCH = 7


class NumpyBackend(BackendBase):
    """Evaluates batches with ``lc0py.model.forward`` in float32 or float64 on the CPU."""

    name = "numpy"

    def __init__(self, network: Network | ResidualNetwork, precision: str = "fp32",
                 threads: int | None = None) -> None:
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}")
        self.precision = precision
        self.threads = blas_threads(threads)
        self.dtype = PRECISIONS[precision]
        self.network = cast_network(network, self.dtype)
        self.info = BackendInfo.of_network(
            network,
            recommended_batch=32,
            runs_on_cpu=True,
            search_minibatch=LC0_EIGEN_MINIBATCH,
        )

    def evaluate(self, batch: PlanesBatch) -> NetworkOutput:
        """``batch`` (``B`` positions) -> float32 ``policy [B,1858]``, ``wdl [B,3]``, ``moves_left [B]``."""
        if len(batch) == 0:
            return NetworkOutput(
                np.zeros((0, 1858), np.float32), np.zeros((0, 3), np.float32), np.zeros(0, np.float32)
            )
        with blas_limit(self.threads):
            out = forward(self.network, batch.dense(self.dtype), self.dtype)
        return NetworkOutput(
            policy=out.policy.astype(np.float32),
            wdl=out.wdl.astype(np.float32),
            moves_left=out.moves_left.astype(np.float32),
        )

    def __repr__(self) -> str:
        return f"NumpyBackend(precision={self.precision!r}, threads={self.threads})"


def create(network: Network | ResidualNetwork, options: BackendOptions) -> NumpyBackend:
    """Registry factory: ``options`` may hold ``precision``; anything else is refused."""
    precision = options.take_choice("precision", "fp32", tuple(PRECISIONS))
    threads = options.take("threads", None, lambda key, text: _threads_option(key, text))
    options.finish(KNOWN_OPTIONS)
    return NumpyBackend(network, precision, threads)


def _threads_option(key: str, text: str) -> int:
    from lc0py.backends.options import to_int

    return int(to_int(key, text, 0, 1024))
