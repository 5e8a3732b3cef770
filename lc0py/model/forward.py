"""The reference forward pass of an lc0 attention-body network (docs/attention-body.md §2-§10).

``forward(network, planes, dtype)`` is the truth every other backend is checked against: plain
numpy, vectorised over the batch, float32 or float64 throughout (weights are cast to ``dtype``;
``cast_network`` does that once ahead of time). Pass ``trace={}`` (or a callable
``trace(key, array)``) to record intermediates:

======================== ===================== =============================================
key                      shape                 what
======================== ===================== =============================================
``tokens``               ``[B, 64, 112]``      planes as tokens (§2)
``embedding``            ``[B, 64, E]``        body input after embedding/gating/emb-FFN (§3)
``encoder{l}.smolgen``   ``[B, H, 64, 64]``    smolgen attention bias ``G`` (if present)
``encoder{l}.attention`` ``[B, 64, D]``        ``O``: attention output before ``mha.dense``
``encoder{l}.mha``       ``[B, 64, E]``        ``y = O @ dense_w.T + dense_b``
``encoder{l}.ln1``       ``[B, 64, E]``        ``x1 = LN(x + alpha*y)``
``encoder{l}.output``    ``[B, 64, E]``        layer output ``x2``
``policy.logits4288``    ``[B, 4288]``         attention policy vector before the gather
``value.logits``         ``[B, 3]`` / ``[B,1]`` value head output before softmax / tanh
======================== ===================== =============================================
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from lc0py.model.layers import (
    apply_layer_norm,
    attention_reference,
    cast,
    dense,
    matmul_t,
    softmax,
)
from lc0py.model.tables import attention_policy_gather, pos_encoding_table
from lc0py.weights.network import (
    Activation,
    Dense,
    Embedding,
    EncoderLayer,
    InputEmbedding,
    MovesLeftHead,
    Network,
    PolicyHead,
    ValueHead,
)
from lc0py.weights.residual import ResidualNetwork

NetworkT = TypeVar("NetworkT", bound=Network | ResidualNetwork)
Trace = dict[str, np.ndarray] | Callable[[str, np.ndarray], None] | None

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


def _record(trace: Trace, key: str, value: np.ndarray) -> None:
    if trace is None:
        return
    if callable(trace):
        trace(key, value)
    else:
        trace[key] = value


def planes_to_tokens(planes: np.ndarray, dtype: type = np.float32) -> np.ndarray:
    """``[B, 112, 8, 8]`` -> ``[B, 64, 112]`` tokens, ``X[b, s, p] = planes[b, p, s//8, s%8]``."""
    planes = np.asarray(planes)
    if planes.ndim != 4 or planes.shape[1:] != (NUM_PLANES, 8, 8):
        raise ValueError(f"planes must be [B, 112, 8, 8], got {list(planes.shape)}")
    b = planes.shape[0]
    return np.ascontiguousarray(cast(planes, dtype).reshape(b, NUM_PLANES, 64).transpose(0, 2, 1))


def _gate(h: np.ndarray, emb: Embedding) -> np.ndarray:
    """Input gating (§3.4): only when both gates exist; stored ``[E, 64]`` channel-major."""
    if emb.mult_gate is None or emb.add_gate is None:
        return h
    return h * cast(emb.mult_gate, h.dtype).T + cast(emb.add_gate, h.dtype).T


def _ffn(x: np.ndarray, w1: Any, w2: Any, act: Activation) -> np.ndarray:
    return dense(dense(x, w1, act), w2, Activation.NONE)


def embed(network: Network, tokens: np.ndarray) -> np.ndarray:
    """Input embedding (§3): ``[B, 64, 112]`` tokens -> ``[B, 64, E]``.

    PE_MAP (and NONE, run as PE_MAP like lc0's blas): concat the ``kPosEncoding`` table, dense +
    default activation, gating. PE_DENSE: preproc dense of the 12 current piece planes, concat,
    dense + default activation, LayerNorm, gating, embedding FFN with DeepNorm alpha + LayerNorm.
    """
    emb = network.embedding
    b = tokens.shape[0]
    dt = tokens.dtype
    if emb.kind == InputEmbedding.PE_DENSE:
        if emb.preproc is None or emb.ln is None:
            raise ValueError("PE_DENSE embedding needs preproc and ln weights")
        pieces = tokens[:, :, 0:12].reshape(b, 64 * 12)
        extra = dense(pieces, emb.preproc, Activation.NONE).reshape(b, 64, -1)
    else:
        extra = np.broadcast_to(pos_encoding_table(dt), (b, 64, 64))
    z = np.concatenate([tokens, extra], axis=-1)
    h = dense(z, emb.dense, network.default_act)
    if emb.kind == InputEmbedding.PE_DENSE:
        assert emb.ln is not None
        h = apply_layer_norm(h, emb.ln)
        h = _gate(h, emb)
        if emb.ffn1 is not None and emb.ffn2 is not None and emb.ffn_ln is not None:
            f = _ffn(h, emb.ffn1, emb.ffn2, network.ffn_act)
            h = apply_layer_norm(h + dt.type(network.alpha) * f, emb.ffn_ln)
    else:
        h = _gate(h, emb)
    return h


def smolgen_bias(network: Network, layer: EncoderLayer, x: np.ndarray) -> np.ndarray | None:
    """Smolgen attention bias ``G [B, H, 64, 64]`` from the layer input ``x [B, 64, E]`` (§4.3)."""
    sg = layer.smolgen
    if sg is None or network.smolgen_w is None:
        return None
    b = x.shape[0]
    c = matmul_t(x, sg.compress).reshape(b, -1)  # [B, 64*hc], index s*hc + k
    g1 = apply_layer_norm(dense(c, sg.dense1, network.smolgen_act), sg.ln1)
    g2 = apply_layer_norm(dense(g1, sg.dense2, network.smolgen_act), sg.ln2)
    g2 = g2.reshape(b, network.heads, -1)  # [B, H, gs]
    return matmul_t(g2, network.smolgen_w).reshape(b, network.heads, 64, 64)


def encoder_layer(
    network: Network, layer: EncoderLayer, x: np.ndarray, trace: Trace = None, prefix: str = ""
) -> np.ndarray:
    """One post-LN encoder block (§4): ``x [B, 64, E]`` -> ``[B, 64, E]``."""
    alpha = x.dtype.type(network.alpha)
    q = dense(x, layer.q)
    k = dense(x, layer.k)
    v = dense(x, layer.v)
    bias = smolgen_bias(network, layer, x)
    if bias is not None:
        _record(trace, prefix + "smolgen", bias)
    o = attention_reference(q, k, v, bias, network.heads)
    _record(trace, prefix + "attention", o)
    y = dense(o, layer.out)
    _record(trace, prefix + "mha", y)
    x1 = apply_layer_norm(x + alpha * y, layer.ln1)
    _record(trace, prefix + "ln1", x1)
    f = _ffn(x1, layer.ffn1, layer.ffn2, network.ffn_act)
    x2 = apply_layer_norm(x1 + alpha * f, layer.ln2)
    _record(trace, prefix + "output", x2)
    return x2


def policy_head(network: Network, head: PolicyHead, h: np.ndarray, trace: Trace = None) -> np.ndarray:
    """Attention policy (§8): body output ``[B, 64, E]`` -> logits ``[B, 1858]``."""
    p = dense(h, head.embedding, network.default_act)
    return attention_policy_logits(head, p, trace)


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
    _record(trace, "policy.logits4288", v)
    return v[:, attention_policy_gather()]


def value_from_features(v: np.ndarray, fc1: Dense, fc2: Dense, act: Activation, wdl: bool,
                        trace: Trace = None) -> np.ndarray:
    """The value MLP every body shares: flattened head features ``[B, n]`` -> ``fc1`` (``act``)
    -> ``fc2`` -> ``(W, D, L) [B, 3]``: softmax of 3 logits, or ``((1+q)/2, 0, (1-q)/2)`` with
    ``q = tanh`` of a classical head's single output."""
    z = dense(dense(v, fc1, act), fc2)
    _record(trace, "value.logits", z)
    if wdl:
        return softmax(z, axis=-1)
    q = np.tanh(z[:, 0])
    one = v.dtype.type(1)
    return np.stack([(one + q) / 2, np.zeros_like(q), (one - q) / 2], axis=1)


def moves_left_from_features(m: np.ndarray, fc1: Dense, fc2: Dense, act: Activation) -> np.ndarray:
    """The moves-left MLP every body shares: ``[B, n]`` -> ``fc1`` (``act``) -> ``fc2`` (ReLU,
    skipped without ``ip2_mov_b`` as lc0 does) -> ``[B]``."""
    return dense(dense(m, fc1, act), fc2, Activation.RELU)[:, 0]


def value_head(network: Network, head: ValueHead, h: np.ndarray, trace: Trace = None) -> np.ndarray:
    """Value (§9): ``[B, 64, E]`` -> ``(W, D, L) [B, 3]``."""
    v = dense(h, head.embedding, network.default_act).reshape(h.shape[0], -1)  # square-major s*Vc + c
    return value_from_features(v, head.fc1, head.fc2, network.default_act, head.wdl, trace)


def moves_left_head(network: Network, head: MovesLeftHead, h: np.ndarray) -> np.ndarray:
    """Moves-left (§10): ``[B, 64, E]`` -> ``[B]``."""
    m = dense(h, head.embedding, network.default_act).reshape(h.shape[0], -1)
    return moves_left_from_features(m, head.fc1, head.fc2, network.default_act)


def forward(
    network: Network | ResidualNetwork, planes: np.ndarray, dtype: type = np.float32, trace: Trace = None
) -> ForwardOutput:
    """Evaluate ``planes [B, 112, 8, 8]`` with ``network`` in ``dtype`` (float32 or float64).

    Residual (convolutional) networks run ``lc0py.model.residual.forward_residual``.
    """
    if np.dtype(dtype) not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError(f"dtype must be float32 or float64, got {np.dtype(dtype)}")
    if isinstance(network, ResidualNetwork):
        from lc0py.model.residual import forward_residual

        return forward_residual(network, planes, dtype, trace)
    x = planes_to_tokens(planes, dtype)
    _record(trace, "tokens", x)
    h = embed(network, x)
    _record(trace, "embedding", h)
    for i, layer in enumerate(network.encoders):
        h = encoder_layer(network, layer, h, trace, prefix=f"encoder{i}.")
    policy = policy_head(network, network.policy, h, trace)
    wdl = value_head(network, network.value, h, trace)
    if network.moves_left is not None:
        mlh = moves_left_head(network, network.moves_left, h)
    else:
        mlh = np.zeros(x.shape[0], dtype=x.dtype)
    return ForwardOutput(policy=policy, wdl=wdl, moves_left=mlh)


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
