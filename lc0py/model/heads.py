"""What both bodies' reference forward passes share after their tower: the output record, the
trace hook and the heads computed alike (the attention policy logits, the value and moves-left MLPs).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from lc0py.model.layers import dense, matmul_t, softmax
from lc0py.model.tables import attention_policy_gather
from lc0py.weights.network import Activation, Dense, PolicyHead

Trace = dict[str, np.ndarray] | Callable[[str, np.ndarray], np.ndarray | None] | None

NUM_PLANES = 112
POLICY_SIZE = 1858


@dataclass
class ForwardOutput:
    """Raw network outputs in the computation dtype.

    ``policy``: ``[B, 1858]`` logits (lc0 order, no softmax); ``wdl``: ``[B, 3]`` probabilities
    (win, draw, loss for the side to move; classical value nets give ``((1+q)/2, 0, (1-q)/2)``);
    ``moves_left``: ``[B]`` (zeros without a moves-left head).
    """

    policy: np.ndarray
    wdl: np.ndarray
    moves_left: np.ndarray

    @property
    def q(self) -> np.ndarray:
        """``W - L`` per position ``[B]``."""
        return self.wdl[:, 0] - self.wdl[:, 2]


def record(trace: Trace, key: str, value: np.ndarray) -> np.ndarray:
    """Hand ``value`` to the trace hook under ``key`` (a dict stores it, a callable gets it) and
    return what the pass goes on with: ``value``, or the array a callable returned in its place
    (an intervention, ``Net.trace(intervene=...)``: same shape, patched values; ``None`` keeps it)."""
    if trace is None:
        return value
    if callable(trace):
        replaced = trace(key, value)
        if replaced is None:
            return value
        out = np.asarray(replaced, dtype=value.dtype)
        if out.shape != value.shape:
            raise ValueError(f"trace hook for {key!r} returned shape {list(out.shape)}, "
                             f"expected {list(value.shape)}")
        return out
    trace[key] = value
    return value


def attention_policy_logits(head: PolicyHead, p: np.ndarray, trace: Trace = None) -> np.ndarray:
    """The attention policy after its embedding: ``p [B, 64, Pe]`` -> logits ``[B, 1858]``.

    Shared by attention bodies and residual bodies with an attention policy head.
    """
    b = p.shape[0]
    qp = dense(p, head.wq)
    kp = dense(p, head.wk)
    pd = qp.shape[-1]
    logits = (qp @ kp.transpose(0, 2, 1)) / np.sqrt(p.dtype.type(pd))  # [B, from, to]
    off = matmul_t(kp[:, 56:64, :], head.promotion)  # [B, 8 to-file, 4] (q, r, b, n), unscaled
    promo = logits[:, 48:56, 56:64, None] + off[:, None, :, 0:3] + off[:, None, :, 3:4]
    v = np.concatenate([logits.reshape(b, 4096), promo.reshape(b, 192)], axis=1)
    v = record(trace, "policy.logits4288", v)
    return v[:, attention_policy_gather()]


def value_from_features(v: np.ndarray, fc1: Dense, fc2: Dense, act: Activation, wdl: bool,
                        trace: Trace = None) -> np.ndarray:
    """The value MLP every body shares: flattened head features ``[B, n]`` -> ``fc1`` (``act``)
    -> ``fc2`` -> ``(W, D, L) [B, 3]``: softmax of 3 logits, or ``((1+q)/2, 0, (1-q)/2)`` with
    ``q = tanh`` of a classical head's single output."""
    z = dense(dense(v, fc1, act), fc2)
    z = record(trace, "value.logits", z)
    if wdl:
        return softmax(z, axis=-1)
    q = np.tanh(z[:, 0])
    one = v.dtype.type(1)
    return np.stack([(one + q) / 2, np.zeros_like(q), (one - q) / 2], axis=1)


def moves_left_from_features(m: np.ndarray, fc1: Dense, fc2: Dense, act: Activation) -> np.ndarray:
    """The moves-left MLP every body shares: ``[B, n]`` -> ``fc1`` (``act``) -> ``fc2`` (ReLU,
    skipped without ``ip2_mov_b`` as lc0 does) -> ``[B]``."""
    return dense(dense(m, fc1, act), fc2, Activation.RELU)[:, 0]

