"""lc0py: a Python inference engine for lc0 (Leela Chess Zero) networks, attention-body and residual.

Evaluate a position::

    import chess, lc0py
    net = lc0py.load("weights/tiny-seed1.pb.gz")   # or a real lc0 net; None: built-in random net
    ev = net.evaluate(chess.Board())               # Evaluation: policy, wdl, q, moves_left
    ev.best_move, ev.wdl, ev.q

Public API (importing it imports no vendor package: CUDA, HIP and ONNX Runtime load only when a
backend needs them):

* :func:`load` -> :class:`Net` with ``evaluate``, ``evaluate_many``, ``trace``;
* :class:`Evaluation`, :class:`Trace`: their results;
* :func:`load_network` -> :class:`lc0py.weights.Network` (the typed weights);
* :func:`create_backend`, :func:`available_backends`: backends by lc0's names;
* ``lc0py.errors``: the exceptions (every user error is an ``Lc0pyError``).
"""

from __future__ import annotations

from lc0py.api import Evaluation, Net, Trace, load
from lc0py.backends.registry import available_backends, create_backend
from lc0py.weights import load_network

__version__ = "0.1.0"
__all__ = [
    "Evaluation",
    "Net",
    "Trace",
    "__version__",
    "available_backends",
    "create_backend",
    "load",
    "load_network",
]
