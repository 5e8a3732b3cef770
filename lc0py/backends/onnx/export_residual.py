"""The ONNX graph of a classical residual (SE-ResNet) network, with lc0's ``leela2onnx`` names.

Same inputs and outputs as the attention-body export (``/input/planes`` -> ``/output/policy``,
``/output/wdl`` or ``/output/value``, ``/output/mlh``). The tower stays NCHW ``[B, C, 8, 8]`` and
uses ONNX ``Conv`` (same padding); node names follow lc0's converter (``src/neural/onnx/
converter.cc``): ``/inputconv``, ``/block{i}/conv1``, ``/block{i}/conv2`` with ``/se`` and
``/mixin`` (the skip), ``/policy/conv1``, ``/policy/conv2``, ``/policy/flatten`` and the
``/const/mapping_table`` gather for convolution policies, ``/policy/conv`` + ``/policy/dense`` for
classical ones, ``/value/conv``, ``/value/dense1``, ``/value/dense2``, ``/mlh/conv``, ....

SE: ``GlobalAveragePool`` -> dense + activation -> dense -> split into scale (Sigmoid) and bias:
``act(sigmoid(s)·y + t + x)``. An attention policy on a residual body turns the map into
``[B·64, C]`` tokens, applies the SELU embedding and any policy encoder layers, then the shared
attention-policy graph of ``graph_ops.py``.
"""

from __future__ import annotations

import numpy as np

from lc0py.backends.onnx.graph_ops import GraphOps
from lc0py.backends.onnx.names import INPUT_PLANES, OUTPUT_POLICY
from lc0py.errors import UnsupportedNetError
from lc0py.model.tables import conv_policy_gather
from lc0py.weights.network import Activation, EncoderLayer
from lc0py.weights.residual import (
    ClassicalPolicyHead,
    Conv,
    ConvPolicyHead,
    ResidualAttentionPolicyHead,
    ResidualNetwork,
    SEUnit,
)

_ACTIVATIONS = (Activation.RELU, Activation.MISH)
_POLICY_ACT = Activation.SELU  # lc0 hard-codes SELU for attention policies on residual bodies


def check_residual_supported(network: ResidualNetwork) -> None:
    """Refuse what the graph cannot express (one line)."""
    if network.default_act not in _ACTIVATIONS:
        act = network.default_act.name
        raise UnsupportedNetError(f"ONNX export: default activation {act} is not supported")
    if network.value.fc2.n_out not in (1, 3):
        raise UnsupportedNetError(f"ONNX export: value head with {network.value.fc2.n_out} outputs")


class ResidualExporter(GraphOps[ResidualNetwork]):
    """Emits the graph of one residual network (with the shared dense/activation/LN/attention policy)."""

    graph_name = "lc0py_residual"
    check_supported = staticmethod(check_residual_supported)

    @staticmethod
    def label(attention: str) -> str:
        return "residual body"

    def describe(self, fp16: bool, attention: str) -> str:
        n = self.net
        return (f"lc0 residual net: {n.num_blocks}x{n.filters}, {n.se_blocks} SE blocks, "
                f"{type(n.policy).__name__}; dtype={'float16' if fp16 else 'float32'}")

    def conv(self, x: str, conv: Conv, name: str, act: Activation = Activation.NONE) -> str:
        g = self.g
        pad = (conv.kernel - 1) // 2
        y = g.op("Conv", [x, g.weight(name + "/w", conv.w), g.weight(name + "/b", conv.b)], name,
                 kernel_shape=[conv.kernel, conv.kernel], pads=[pad] * 4)
        return self.activation(y, act, name)

    def squeeze_excite(self, y: str, se: SEUnit, name: str) -> str:
        """``sigmoid(s)·y + t`` for ``(s, t) = fc2(act(fc1(mean over squares of y)))``."""
        g, c = self.g, self.net.filters
        pooled = g.op("Flatten", [g.op("GlobalAveragePool", [y], name + "/reduce_mean")], name + "/flatten")
        z = self.dense(pooled, se.fc1, name + "/matmul1", self.net.default_act)
        z = self.dense(z, se.fc2, name + "/matmul2")
        z = g.reshape(z, [-1, 2 * c, 1, 1], name + "/reshape")
        scale = g.op("Sigmoid", [g.slice(z, [0], [c], [1], name + "/split/scale")], name + "/sigmoid")
        bias = g.slice(z, [c], [2 * c], [1], name + "/split/bias")
        return g.op("Add", [g.op("Mul", [scale, y], name + "/mul"), bias], name + "/add3")

    def build(self) -> tuple[str, str, str | None]:
        net = self.net
        act = net.default_act
        h = self.conv(INPUT_PLANES, net.input, "/inputconv", act)
        for i, block in enumerate(net.blocks):
            name = f"/block{i}"
            y = self.conv(h, block.conv1, name + "/conv1", act)
            y = self.conv(y, block.conv2, name + "/conv2")
            if block.se is not None:
                y = self.squeeze_excite(y, block.se, name + "/conv2/se")
            y = self.g.op("Add", [y, h], name + "/conv2/mixin")
            h = self.activation(y, act, name + "/conv2")
        return self.residual_policy(h), self.residual_value(h), self.residual_moves_left(h)

    def residual_policy(self, h: str) -> str:
        g, head, act = self.g, self.net.policy, self.net.default_act
        if isinstance(head, ConvPolicyHead):
            p = self.conv(h, head.conv1, "/policy/conv1", act)
            p = self.conv(p, head.conv2, "/policy/conv2")
            p = g.reshape(p, [-1, head.conv2.n_out * 64], "/policy/flatten")
            index = g.int64("/const/mapping_table", _conv_policy_gather())
            return g.op("Gather", [p, index], OUTPUT_POLICY, axis=1)
        if isinstance(head, ClassicalPolicyHead):
            p = self.conv(h, head.conv, "/policy/conv", act)
            p = g.reshape(p, [-1, head.conv.n_out * 64], "/policy/reshape")
            p = self.dense(p, head.fc, "/policy/dense")
            return g.op("Identity", [p], OUTPUT_POLICY)
        assert isinstance(head, ResidualAttentionPolicyHead)
        c = self.net.filters
        t = g.transpose(g.reshape(h, [-1, c, 64], "/policy/tokens/reshape"), [0, 2, 1], "/policy/tokens")
        t = g.reshape(t, [-1, c], "/policy/tokens/flatten")  # [B·64, C]
        p = self.dense(t, head.head.embedding, "/policy/dense1", _POLICY_ACT)
        for i, layer in enumerate(head.encoders):
            p = self.policy_encoder(p, layer, head.encoder_heads, f"/policy/enc_layer_{i}")
        return self.attention_policy(p, head.head)

    def policy_encoder(self, x: str, layer: EncoderLayer, heads: int, name: str) -> str:
        """Post-LN encoder layer without DeepNorm scaling, SELU FFN (policy encoders of residual nets)."""
        o = self.plain_attention(x, layer, heads, None, name)
        return self.attention_output(x, o, layer, _POLICY_ACT, 1.0, name)

    def residual_value(self, h: str) -> str:
        head = self.net.value
        v = self.conv(h, head.conv, "/value/conv", self.net.default_act)
        return self.value_output(v, head.conv.n_out, head.fc1, head.fc2, head.wdl)

    def residual_moves_left(self, h: str) -> str | None:
        head = self.net.moves_left
        if head is None:
            return None
        m = self.conv(h, head.conv, "/mlh/conv", self.net.default_act)
        return self.moves_left_output(m, head.conv.n_out, head.fc1, head.fc2)


def _conv_policy_gather() -> np.ndarray:
    return np.asarray(conv_policy_gather(), dtype=np.int64)
