"""The reference forward pass of an lc0 attention-body network (docs/attention-body.md §2-§10).

``forward_attention(network, planes, dtype)`` (reached through ``lc0py.model.forward``): plain
numpy, vectorised over the batch, in ``dtype`` throughout. Pass ``trace={}`` (or a callable
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

from typing import Any

import numpy as np

from lc0py.model.heads import (
    NUM_PLANES,
    ForwardOutput,
    Trace,
    attention_policy_logits,
    moves_left_from_features,
    record,
    value_from_features,
)
from lc0py.model.layers import apply_layer_norm, attention_reference, cast, dense, matmul_t
from lc0py.model.tables import pos_encoding_table
from lc0py.weights.network import (
    Activation,
    Embedding,
    EncoderLayer,
    InputEmbedding,
    MovesLeftHead,
    Network,
    PolicyHead,
    ValueHead,
)


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
        bias = record(trace, prefix + "smolgen", bias)
    o = attention_reference(q, k, v, bias, network.heads)
    o = record(trace, prefix + "attention", o)
    y = dense(o, layer.out)
    y = record(trace, prefix + "mha", y)
    x1 = apply_layer_norm(x + alpha * y, layer.ln1)
    x1 = record(trace, prefix + "ln1", x1)
    f = _ffn(x1, layer.ffn1, layer.ffn2, network.ffn_act)
    x2 = apply_layer_norm(x1 + alpha * f, layer.ln2)
    x2 = record(trace, prefix + "output", x2)
    return x2


def policy_head(network: Network, head: PolicyHead, h: np.ndarray, trace: Trace = None) -> np.ndarray:
    """Attention policy (§8): body output ``[B, 64, E]`` -> logits ``[B, 1858]``."""
    p = dense(h, head.embedding, network.default_act)
    return attention_policy_logits(head, p, trace)


def value_head(network: Network, head: ValueHead, h: np.ndarray, trace: Trace = None) -> np.ndarray:
    """Value (§9): ``[B, 64, E]`` -> ``(W, D, L) [B, 3]``."""
    v = dense(h, head.embedding, network.default_act).reshape(h.shape[0], -1)  # square-major s*Vc + c
    return value_from_features(v, head.fc1, head.fc2, network.default_act, head.wdl, trace)


def moves_left_head(network: Network, head: MovesLeftHead, h: np.ndarray) -> np.ndarray:
    """Moves-left (§10): ``[B, 64, E]`` -> ``[B]``."""
    m = dense(h, head.embedding, network.default_act).reshape(h.shape[0], -1)
    return moves_left_from_features(m, head.fc1, head.fc2, network.default_act)


def forward_attention(network: Network, planes: np.ndarray, dtype: type = np.float32,
                      trace: Trace = None) -> ForwardOutput:
    """Evaluate ``planes [B, 112, 8, 8]`` with an attention-body ``network`` in ``dtype``."""
    x = planes_to_tokens(planes, dtype)
    x = record(trace, "tokens", x)
    h = embed(network, x)
    h = record(trace, "embedding", h)
    for i, layer in enumerate(network.encoders):
        h = encoder_layer(network, layer, h, trace, prefix=f"encoder{i}.")
    policy = policy_head(network, network.policy, h, trace)
    wdl = value_head(network, network.value, h, trace)
    if network.moves_left is not None:
        mlh = moves_left_head(network, network.moves_left, h)
    else:
        mlh = np.zeros(x.shape[0], dtype=x.dtype)
    return ForwardOutput(policy=policy, wdl=wdl, moves_left=mlh)

