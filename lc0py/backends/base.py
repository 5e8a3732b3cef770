"""The backend interface: a batch of encoded positions in, network outputs out.

A position is encoded as lc0 does it (``lc0py.chess``): 112 planes, each a 64-bit square mask and
one float value (``PlanesBatch``, defined beside the encoding in ``lc0py.chess.planes``). Backends
receive those compact arrays (12 bytes a plane instead of 256), expand them where they compute (on
the GPU for the GPU backends) and return raw network outputs:

* ``policy``: ``[B, 1858]`` float32 logits in lc0's policy order (no softmax);
* ``wdl``: ``[B, 3]`` float32 probabilities (win, draw, loss) from the side to move; classical
  value nets give ``(q', 0, -q')`` mapped to ``W = (1+q)/2, D = 0, L = (1-q)/2``;
* ``moves_left``: ``[B]`` float32 (zeros if the net has no moves-left head).

``evaluate_async`` lets search gather the next minibatch while the device works; backends that
compute on the host may simply compute in ``evaluate_async`` and return a finished handle.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from lc0py.chess.planes import PlanesBatch

if TYPE_CHECKING:
    from lc0py.weights.network import Network
    from lc0py.weights.residual import ResidualNetwork

POLICY_SIZE = 1858


@dataclass
class NetworkOutput:
    policy: np.ndarray  # [B, 1858] float32 logits
    wdl: np.ndarray  # [B, 3] float32
    moves_left: np.ndarray  # [B] float32

    def __len__(self) -> int:
        return int(self.policy.shape[0])

    @property
    def q(self) -> np.ndarray:
        """``W - L`` per position."""
        return self.wdl[:, 0] - self.wdl[:, 2]


#: Up to this many rows ``wdl_from_value`` works on Python floats: a dozen numpy calls on arrays
#: of a few rows cost ~8 us (~16 us on the GPU hosts' cores), more than T82's host path spends on
#: anything else after the device is done with a batch of one (docs/performance.md §1).
WDL_SCALAR_ROWS = 4


def wdl_from_value(z: np.ndarray) -> np.ndarray:
    """``(W, D, L) [B, 3]`` from a value head's raw output ``z``: the softmax of ``[B, 3]``
    WDL logits, or ``((1+q)/2, 0, (1-q)/2)`` with ``q = tanh(z)`` for a classical head's ``[B, 1]``.

    Up to ``WDL_SCALAR_ROWS`` rows it is computed in double precision and rounded once to
    float32 (float64 for float64 input); the numpy path below computes in ``z``'s own precision.
    For float32 logits the two agree within an ulp or two."""
    if len(z) <= WDL_SCALAR_ROWS:
        dtype = np.float64 if z.dtype == np.float64 else np.float32
        return _wdl_scalar(z.tolist(), z.shape[1] == 3, dtype)
    if z.shape[1] == 3:
        # Column by column, not z.max(axis=1) / e.sum(axis=1): numpy's reductions over a length-3
        # axis cost ~25-60 us each at 1024 rows, and this runs on every GPU batch after the device
        # is done (114 -> 24 us a 1024-position batch; the same sums in the same order).
        c0, c1, c2 = z[:, 0], z[:, 1], z[:, 2]
        e = np.exp(z - np.maximum(np.maximum(c0, c1), c2)[:, None])
        return e / (e[:, 0] + e[:, 1] + e[:, 2])[:, None]
    q = np.tanh(z[:, 0])
    return np.stack([(1 + q) / 2, np.zeros_like(q), (1 - q) / 2], axis=1)


def _wdl_scalar(rows: list[list[float]], logits: bool, dtype: type) -> np.ndarray:
    """``wdl_from_value`` of a few rows (``z.tolist()``) on Python floats."""
    out = []
    for row in rows:
        if logits:
            a, b, c = row
            m = max(a, b, c)
            ea, eb, ec = math.exp(a - m), math.exp(b - m), math.exp(c - m)
            s = ea + eb + ec
            out.append((ea / s, eb / s, ec / s))
        else:
            q = math.tanh(row[0])
            out.append(((1 + q) / 2, 0.0, (1 - q) / 2))
    return np.array(out, dtype).reshape(len(rows), 3)


class PendingOutput(Protocol):
    """Handle of a submitted batch; ``result()`` blocks until the outputs are on the host."""

    def result(self) -> NetworkOutput: ...

    def done(self) -> bool:
        """Whether ``result()`` would return at once."""
        ...


class ReadyOutput:
    """A handle whose result is already computed (host backends)."""

    def __init__(self, output: NetworkOutput) -> None:
        self._output = output

    def result(self) -> NetworkOutput:
        return self._output

    def done(self) -> bool:
        return True


class SettledOutput:
    """A batch's outputs handed over by another thread (a feeder, a child's thread): ``result()``
    waits until ``deliver`` gave the outputs or the error in their place, then returns them or
    raises it; ``done()`` says whether it would return at once. Safe to call from any thread,
    any number of times."""

    __slots__ = ("_error", "_out", "_ready")

    def __init__(self) -> None:
        self._ready = threading.Event()
        self._out: NetworkOutput | None = None
        self._error: BaseException | None = None

    def deliver(self, out: NetworkOutput | None, error: BaseException | None) -> None:
        self._out, self._error = out, error
        self._ready.set()

    def done(self) -> bool:
        return self._ready.is_set()

    def result(self) -> NetworkOutput:
        self._ready.wait()
        if self._error is not None:
            raise self._error
        assert self._out is not None
        return self._out


@dataclass
class BackendInfo:
    """What search needs to know about the network behind a backend."""

    input_format: int  # lc0py.weights.network.InputFormat value
    has_wdl: bool
    has_moves_left: bool
    recommended_batch: int = 256
    # lc0's backend attributes for the search defaults (``runs_on_cpu``, ``recommended_batch_size``):
    # with Threads and MinibatchSize at 0, a CPU backend gets one search thread (lc0's blas/eigen
    # suggest 1) and ``search_minibatch`` leaves a minibatch (0: ``recommended_batch``; lc0's eigen
    # recommends 7), a GPU backend two minibatches in flight of ``recommended_batch``.
    runs_on_cpu: bool = False
    search_minibatch: int = 0
    # ``evaluate_async`` only queues the batch on a device and returns at once (GPU backends): the
    # search submits from its own thread, so the next batch waits on the device's queue rather than
    # behind the previous result. Host backends compute inside ``evaluate_async`` (False): the
    # search runs them on a thread of its own to gather meanwhile.
    asynchronous: bool = False

    @classmethod
    def of_network(cls, network: Network | ResidualNetwork, **attributes: Any) -> BackendInfo:
        """The info of a backend running ``network``: the net's input format and heads, plus the
        backend's own ``attributes`` (``recommended_batch``, ``runs_on_cpu``, ...)."""
        return cls(int(network.format.input), network.has_wdl, network.has_moves_left, **attributes)


@runtime_checkable
class Backend(Protocol):
    """One network on one device. Not thread-safe: one caller at a time."""

    name: str
    info: BackendInfo

    def evaluate(self, batch: PlanesBatch) -> NetworkOutput:
        """Run the network on ``batch`` and wait for the result."""
        ...

    def evaluate_async(self, batch: PlanesBatch) -> PendingOutput:
        """Start evaluating ``batch``; the handle's ``result()`` waits for it."""
        ...

    def prepare(self, max_batch: int) -> None:
        """Do now the one-time work that batches of up to ``max_batch`` positions would otherwise
        pay on first use (a GPU captures its graphs), so that no timed search pays it."""
        ...

    def close(self) -> None:
        """Release device memory and handles (idempotent)."""
        ...


class BackendBase:
    """Convenience base: ``evaluate_async`` computes synchronously; ``close`` does nothing."""

    name = "base"
    info: BackendInfo

    def evaluate(self, batch: PlanesBatch) -> NetworkOutput:  # pragma: no cover - abstract
        raise NotImplementedError

    def evaluate_async(self, batch: PlanesBatch) -> PendingOutput:
        return ReadyOutput(self.evaluate(batch))

    def prepare(self, max_batch: int) -> None:
        return None

    def close(self) -> None:
        return None

    def __enter__(self) -> BackendBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def prepare_backend(backend: Backend, max_batch: int) -> None:
    """``backend.prepare(max_batch)`` for backends that have it (test doubles may not)."""
    prepare = getattr(backend, "prepare", None)
    if prepare is not None:
        prepare(max_batch)
