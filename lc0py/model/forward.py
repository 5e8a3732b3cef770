"""The reference forward pass of an lc0 network, either body: the truth every backend is checked
against (docs/attention-body.md §2-§10, docs/residual-body.md).

``forward(network, planes, dtype)``: plain numpy, vectorised over the batch, float32 or float64
throughout (weights are cast to ``dtype``; ``cast_network`` does that once ahead of time). The body
runs ``attention_body.forward_attention`` or ``residual.forward_residual``, chosen in one table by
``network.body``; both share ``heads.py``. Pass ``trace={}`` (or a callable ``trace(key, array)``)
to record intermediates (keys: each body's module docstring).
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from lc0py.model.attention_body import forward_attention
from lc0py.model.heads import ForwardOutput, Trace
from lc0py.model.residual import forward_residual
from lc0py.weights.network import BodyKind, Network
from lc0py.weights.residual import ResidualNetwork

NetworkT = TypeVar("NetworkT", bound=Network | ResidualNetwork)

#: Each body's forward pass ``(network, planes, dtype, trace) -> ForwardOutput``: the one place
#: the reference dispatches on the body.
_BODIES: dict[BodyKind, Callable[[Any, np.ndarray, type, Trace], ForwardOutput]] = {
    "attention": forward_attention,
    "residual": forward_residual,
}


def forward(
    network: Network | ResidualNetwork, planes: np.ndarray, dtype: type = np.float32, trace: Trace = None
) -> ForwardOutput:
    """Evaluate ``planes [B, 112, 8, 8]`` with ``network`` in ``dtype`` (float32 or float64)."""
    if np.dtype(dtype) not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError(f"dtype must be float32 or float64, got {np.dtype(dtype)}")
    return _BODIES[network.body](network, planes, dtype, trace)


def cast_network(network: NetworkT, dtype: type) -> NetworkT:
    """A copy of ``network`` whose float arrays are ``dtype`` (shared when already so).

    Lets repeated float64 evaluations skip the per-call weight conversion.
    """
    target = np.dtype(dtype)

    def conv(obj: Any) -> Any:
        if isinstance(obj, np.ndarray):
            return obj.astype(target, copy=False) if obj.dtype.kind == "f" else obj
        if isinstance(obj, list):
            return [conv(o) for o in obj]
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            changes = {f.name: conv(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
            return dataclasses.replace(obj, **changes)
        return obj

    return typing.cast(NetworkT, conv(network))
