"""The reference forward pass of a classical residual (SE-ResNet) lc0 network.

``forward_residual(network, planes, dtype, trace)`` computes what lc0's CPU backend computes
(``src/neural/backends/blas/network_blas.cc``; docs/residual-body.md), in float32 or float64
throughout, on the ``[B, C, 8, 8]`` feature map (rows are ranks, columns files):

* input 3x3 convolution + default activation;
* per residual block: 3x3 conv + activation, 3x3 conv, then with an SE unit
  ``act(sigmoid(s) * y + t + x)`` where ``(s, t) = fc2(act(fc1(mean_squares(y))))``, else
  ``act(y + x)``;
* policy: convolution (3x3 + act, 3x3, lc0's 73x64 -> 1858 map), classical (1x1 + act, dense) or
  attention (SELU embedding, optional policy encoder layers, the attention-body policy logits);
* value: 1x1 conv + act, dense + act, dense, then softmax (WDL) or tanh; moves-left likewise with
  a final ReLU.

Convolutions are written as im2col + one batched GEMM (``conv2d``): clear, and exact in float64.
Trace keys (``trace={}``): ``input`` ``[B, C, 8, 8]``, ``block{i}.conv1``, ``block{i}.conv2`` (before
SE/skip), ``block{i}.output``, ``policy.planes`` (convolution policy ``[B, P, 64]``), ``value.logits``.
"""

from __future__ import annotations

import numpy as np

from lc0py.model.activations import activation
from lc0py.model.heads import (
    NUM_PLANES,
    ForwardOutput,
    Trace,
    attention_policy_logits,
    moves_left_from_features,
    record,
    value_from_features,
)
from lc0py.model.layers import apply_layer_norm, attention_reference, cast, dense
from lc0py.model.tables import conv_policy_gather
from lc0py.weights.network import Activation, EncoderLayer
from lc0py.weights.residual import (
    ClassicalPolicyHead,
    Conv,
    ConvMovesLeftHead,
    ConvPolicyHead,
    ConvValueHead,
    ResidualAttentionPolicyHead,
    ResidualBlock,
    ResidualNetwork,
    SEUnit,
)

#: lc0 hard-codes SELU for the policy embedding and policy-encoder FFNs of non-attention bodies.
RESIDUAL_ATTENTION_POLICY_ACT = Activation.SELU


def conv2d(x: np.ndarray, conv: Conv) -> np.ndarray:
    """Same-padded convolution (cross-correlation) + bias: ``[B, Cin, 8, 8]`` -> ``[B, Cout, 8, 8]``.

    ``y[b, o, r, f] = bias[o] + sum_{c, dr, df} w[o, c, dr, df] * x[b, c, r + dr - p, f + df - p]``
    with ``p = (k - 1) / 2`` and zeros outside the board.
    """
    b, cin = x.shape[0], x.shape[1]
    w = cast(conv.w, x.dtype)
    cout, k = w.shape[0], w.shape[2]
    xt = x.transpose(1, 0, 2, 3)  # [Cin, B, 8, 8]: the whole batch becomes one GEMM's columns
    if k == 1:
        cols = xt.reshape(cin, b * 64)
    else:
        pad = (k - 1) // 2
        xp = np.pad(xt, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
        cols = np.stack([xp[:, :, dr:dr + 8, df:df + 8] for dr in range(k) for df in range(k)], axis=1)
        cols = cols.reshape(cin * k * k, b * 64)  # row c*k*k + dr*k + df, as w's [in, k, k]
    y = w.reshape(cout, cin * k * k) @ cols  # [Cout, B*64]
    y += cast(conv.b, x.dtype)[:, None]
    return np.ascontiguousarray(y.reshape(cout, b, 8, 8).transpose(1, 0, 2, 3))


def conv_act(x: np.ndarray, conv: Conv, act: Activation) -> np.ndarray:
    y = conv2d(x, conv)
    return activation(act, y) if act != Activation.NONE else y


def squeeze_excite(y: np.ndarray, se: SEUnit, act: Activation) -> tuple[np.ndarray, np.ndarray]:
    """SE gate of ``y [B, C, 8, 8]``: ``(sigmoid scale [B, C, 1, 1], bias [B, C, 1, 1])``."""
    b, c = y.shape[0], y.shape[1]
    pooled = y.reshape(b, c, 64).mean(axis=2)
    z = dense(dense(pooled, se.fc1, act), se.fc2, Activation.NONE)
    scale = activation(Activation.SIGMOID, z[:, :c])
    return scale.reshape(b, c, 1, 1), z[:, c:].reshape(b, c, 1, 1)


def residual_block(network: ResidualNetwork, block: ResidualBlock, x: np.ndarray, trace: Trace = None,
                   prefix: str = "") -> np.ndarray:
    act = network.default_act
    h = conv_act(x, block.conv1, act)
    h = record(trace, prefix + "conv1", h)
    y = conv2d(h, block.conv2)
    y = record(trace, prefix + "conv2", y)
    if block.se is not None:
        scale, bias = squeeze_excite(y, block.se, act)
        y = scale * y + bias
    out = activation(act, y + x)
    out = record(trace, prefix + "output", out)
    return out


def _policy_encoder(layer: EncoderLayer, x: np.ndarray, heads: int) -> np.ndarray:
    """A policy encoder layer on a residual body: post-LN, no DeepNorm scaling, SELU FFN."""
    o = attention_reference(dense(x, layer.q), dense(x, layer.k), dense(x, layer.v), None, heads)
    x1 = apply_layer_norm(x + dense(o, layer.out), layer.ln1)
    f = dense(dense(x1, layer.ffn1, RESIDUAL_ATTENTION_POLICY_ACT), layer.ffn2, Activation.NONE)
    return apply_layer_norm(x1 + f, layer.ln2)


def policy_head(network: ResidualNetwork, h: np.ndarray, trace: Trace = None) -> np.ndarray:
    """Tower output ``[B, C, 8, 8]`` -> policy logits ``[B, 1858]``."""
    b = h.shape[0]
    head = network.policy
    act = network.default_act
    if isinstance(head, ConvPolicyHead):
        planes = conv2d(conv_act(h, head.conv1, act), head.conv2).reshape(b, -1, 64)
        planes = record(trace, "policy.planes", planes)
        return planes.reshape(b, -1)[:, conv_policy_gather()]
    if isinstance(head, ClassicalPolicyHead):
        p = conv_act(h, head.conv, act).reshape(b, -1)
        return dense(p, head.fc, Activation.NONE)
    assert isinstance(head, ResidualAttentionPolicyHead)
    tokens = h.reshape(b, h.shape[1], 64).transpose(0, 2, 1)  # [B, 64 squares, C]
    p = dense(tokens, head.head.embedding, RESIDUAL_ATTENTION_POLICY_ACT)
    for layer in head.encoders:
        p = _policy_encoder(layer, p, head.encoder_heads)
    return attention_policy_logits(head.head, p, trace)


def value_head(network: ResidualNetwork, head: ConvValueHead, h: np.ndarray,
               trace: Trace = None) -> np.ndarray:
    """``[B, C, 8, 8]`` -> ``(W, D, L) [B, 3]``."""
    v = conv_act(h, head.conv, network.default_act).reshape(h.shape[0], -1)  # channel-major c*64 + s
    return value_from_features(v, head.fc1, head.fc2, network.default_act, head.wdl, trace)


def moves_left_head(network: ResidualNetwork, head: ConvMovesLeftHead, h: np.ndarray) -> np.ndarray:
    """``[B, C, 8, 8]`` -> ``[B]``."""
    m = conv_act(h, head.conv, network.default_act).reshape(h.shape[0], -1)
    return moves_left_from_features(m, head.fc1, head.fc2, network.default_act)


def tower(network: ResidualNetwork, x: np.ndarray, trace: Trace = None) -> np.ndarray:
    """Input convolution and residual blocks: planes ``[B, 112, 8, 8]`` -> ``[B, C, 8, 8]``."""
    h = conv_act(x, network.input, network.default_act)
    h = record(trace, "input", h)
    for i, block in enumerate(network.blocks):
        h = residual_block(network, block, h, trace, prefix=f"block{i}.")
    return h


def forward_residual(network: ResidualNetwork, planes: np.ndarray, dtype: type = np.float32,
                     trace: Trace = None) -> ForwardOutput:
    """Evaluate ``planes [B, 112, 8, 8]`` with a residual ``network`` in ``dtype``."""
    x = np.asarray(planes)
    if x.ndim != 4 or x.shape[1:] != (NUM_PLANES, 8, 8):
        raise ValueError(f"planes must be [B, 112, 8, 8], got {list(x.shape)}")
    h = tower(network, cast(x, dtype), trace)
    policy = policy_head(network, h, trace)
    wdl = value_head(network, network.value, h, trace)
    if network.moves_left is not None:
        mlh = moves_left_head(network, network.moves_left, h)
    else:
        mlh = np.zeros(x.shape[0], dtype=dtype)
    return ForwardOutput(policy=policy, wdl=wdl, moves_left=mlh)
