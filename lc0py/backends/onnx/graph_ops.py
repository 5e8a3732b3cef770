"""The ONNX building blocks both bodies' exporters share (``export_attention.py``,
``export_residual.py``): activations, dense layers with folded scales, LayerNorm, plain attention
and the post-LN encoder layer, the attention policy, and the value and moves-left outputs, over one
network. Every method returns the name of its output tensor; ``export.py`` picks the exporter.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, Generic, TypeVar

import numpy as np

from lc0py.backends.onnx.graph import GraphBuilder
from lc0py.backends.onnx.names import OUTPUT_MLH, OUTPUT_POLICY, OUTPUT_VALUE, OUTPUT_WDL
from lc0py.errors import UnsupportedNetError
from lc0py.model.tables import attention_policy_gather
from lc0py.weights.network import Activation, Dense, EncoderLayer, LayerNorm, Network, PolicyHead
from lc0py.weights.residual import ResidualNetwork


def f64(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, dtype=np.float64)


NetT = TypeVar("NetT", bound=Network | ResidualNetwork)


class GraphOps(Generic[NetT]):
    """The building blocks shared by both bodies' exporters (activations, dense, LayerNorm, the
    attention policy) over one network; every method returns the name of its output tensor.

    Each body's exporter says what ``network_to_onnx`` needs of it besides the graph:
    ``check_supported`` (refusals), ``graph_name``, ``model_props`` and ``label``.
    """

    graph_name: ClassVar[str]

    def __init__(
        self, network: NetT, float_type: type, opset: int, attention: str, wdl_softmax: bool
    ) -> None:
        self.net = network
        self.wdl_softmax = wdl_softmax
        self.g = GraphBuilder(float_type)
        self.opset = opset
        self.attention = attention
        self._smolgen_w: str | None = None
        self._mish_consts: tuple[str, str] | None = None

    # --- building blocks ---
    def activation(self, x: str, act: Activation, name: str) -> str:
        g = self.g
        if act == Activation.NONE:
            return x
        if act == Activation.RELU:
            return g.op("Relu", [x], name + "/relu")
        if act == Activation.RELU_2:
            r = g.op("Relu", [x], name + "/sqrrelu/relu")
            return g.op("Mul", [r, r], name + "/sqrrelu/sqr")
        if act == Activation.MISH:
            return self.mish(x, name + "/mish")
        if act == Activation.SWISH:
            s = g.op("Sigmoid", [x], name + "/swish/sigmoid")
            return g.op("Mul", [x, s], name + "/swish")
        if act == Activation.SELU:  # ONNX's default alpha/gamma are the float32 SELU constants
            return g.op("Selu", [x], name + "/selu")
        if act == Activation.TANH:
            return g.op("Tanh", [x], name + "/tanh")
        if act == Activation.SIGMOID:
            return g.op("Sigmoid", [x], name + "/sigmoid")
        raise UnsupportedNetError(f"ONNX export: activation {act.name} is not supported")  # pragma: no cover

    def mish(self, x: str, name: str) -> str:
        """``x / (1 + 2 / (e² + 2e))`` with ``e = exp(x)``: mish without Softplus.

        ONNX Runtime's CPU Softplus (and its opset-18 Mish) are scalar loops, ~15x slower than
        these vectorised element-wise ops; the form stays finite where ``e`` overflows (``2/inf =
        0`` gives ``x``) and tends to ``-0`` for very negative ``x``. lc0's converter has the same
        rewrite ("alt_mish").
        """
        g = self.g
        if self._mish_consts is None:
            self._mish_consts = (
                g.weight("/const/mish/one", np.ones(())),
                g.weight("/const/mish/two", np.full((), 2.0)),
            )
        one, two = self._mish_consts
        e = g.op("Exp", [x], name + "/exp")
        n = g.op("Mul", [e, g.op("Add", [e, two], name + "/e+2")], name + "/e*e+2e")
        d = g.op("Add", [g.op("Div", [two, n], name + "/2/(e*e+2e)"), one], name + "/1+2/(e*e+2e)")
        return g.op("Div", [x, d], name)

    def dense(
        self, x: str, layer: Dense, name: str, act: Activation = Activation.NONE, scale: float = 1.0
    ) -> str:
        """``act(x·(scale·W)ᵀ + scale·b)``; no bias and no activation when ``b is None`` (§4.6)."""
        if scale != 1.0 and act != Activation.NONE:
            raise AssertionError("a scale folds only into a layer without activation")
        g = self.g
        w = layer.w.T if scale == 1.0 else f64(layer.w).T * scale
        y = g.op("MatMul", [x, g.weight(name + "/w/weight", w)], name + "/w")
        if layer.b is None:
            return y
        b = layer.b if scale == 1.0 else f64(layer.b) * scale
        y = g.op("Add", [y, g.weight(name + "/b/bias", b)], name + "/b")
        return self.activation(y, act, name)

    def layer_norm(self, x: str, ln: LayerNorm, name: str) -> str:
        g = self.g
        return g.op(
            "LayerNormalization",
            [x, g.weight(name + "/gammas", ln.gamma), g.weight(name + "/betas", ln.beta)],
            name,
            axis=-1,
            epsilon=float(ln.eps),
            stash_type=1,  # statistics in float32 also for float16 models
        )

    def plain_attention(self, x: str, layer: EncoderLayer, heads: int, bias: str | None, name: str) -> str:
        """Scores, smolgen bias, softmax, values with standard ONNX ops: ``[B·64, E]`` → ``[B·64, D]``.

        Q, K and V are three Gemms (bias fused) whose outputs are split into heads by one
        Reshape + Transpose each; K is transposed straight to ``[B, H, d, 64]``.
        """
        g = self.g
        d_model = layer.q.n_out
        depth = d_model // heads
        split = [-1, 64, heads, depth]
        q = self.dense(x, layer.q, name + "/mha/Q", scale=1.0 / math.sqrt(depth))
        q = g.transpose(g.reshape(q, split, name + "/mha/Q/reshape"), [0, 2, 1, 3], name + "/mha/Q/transpose")
        k = self.dense(x, layer.k, name + "/mha/K")
        k = g.transpose(g.reshape(k, split, name + "/mha/K/reshape"), [0, 2, 3, 1], name + "/mha/K/transpose")
        v = self.dense(x, layer.v, name + "/mha/V")
        v = g.transpose(g.reshape(v, split, name + "/mha/V/reshape"), [0, 2, 1, 3], name + "/mha/V/transpose")
        s = g.op("MatMul", [q, k], name + "/mha/QK/matmul")  # [B, H, 64, 64], scaled through Q
        if bias is not None:
            s = g.op("Add", [s, bias], name + "/smolgen_weights")
        a = g.op("Softmax", [s], name + "/mha/QK/softmax", axis=-1)
        o = g.op("MatMul", [a, v], name + "/mha/QKV/matmul")  # [B, H, 64, d]
        o = g.transpose(o, [0, 2, 1, 3], name + "/mha/out/transpose")
        return g.reshape(o, [-1, d_model], name + "/mha/out/reshape")

    def attention_output(self, x: str, o: str, layer: EncoderLayer, act: Activation, alpha: float,
                         name: str) -> str:
        """The rest of a post-LN encoder layer after the attention ``o`` (§4): output projection,
        residual scaled by ``alpha`` (DeepNorm; 1 for the policy encoders of residual nets), LN,
        FFN with ``act``, residual, LN."""
        g = self.g
        y = self.dense(o, layer.out, name + "/mha/out/dense", scale=alpha)
        x1 = self.layer_norm(g.op("Add", [y, x], name + "/mha/out/skip"), layer.ln1, name + "/ln1")
        f = self.dense(x1, layer.ffn1, name + "/ffn/dense1", act)
        f = self.dense(f, layer.ffn2, name + "/ffn/dense2", scale=alpha)
        return self.layer_norm(g.op("Add", [f, x1], name + "/ffn/skip"), layer.ln2, name + "/ln2")

    def attention_policy(self, p: str, pol: PolicyHead) -> str:
        """The attention policy after its embedding: tokens ``[B·64, Pe]`` -> ``/output/policy``."""
        g = self.g
        pd = pol.wq.n_out
        q = self.dense(p, pol.wq, "/policy/Q", scale=1.0 / math.sqrt(pd))
        q = g.reshape(q, [-1, 64, pd], "/policy/Q/reshape")
        k = self.dense(p, pol.wk, "/policy/K")
        k = g.reshape(k, [-1, 64, pd], "/policy/K/reshape")
        kt = g.transpose(k, [0, 2, 1], "/policy/K/transpose")
        logits = g.op("MatMul", [q, kt], "/policy/matmul")  # [B, 64 from, 64 to], scaled through Q
        # Promotion offsets from the to-square keys (rank 8), knight column folded in; unscaled.
        w4 = f64(pol.promotion)
        w_prom = (w4[:3] + w4[3:4]).T  # [Pd, 3]: queen, rook, bishop
        k8 = g.slice(k, [56], [64], [1], "/policy/promotion/slice")  # [B, 8, Pd]
        off = g.op("MatMul", [k8, g.weight("/policy/promotion/weight", w_prom)], "/policy/promotion/matmul")
        off = g.op("Unsqueeze", [off, g.int64("/policy/promotion/axes1", [1])], "/policy/promotion/offsets")
        pawn = g.slice(logits, [48, 56], [56, 64], [1, 2], "/policy/promotion/pawn")  # [B, 8 i, 8 j]
        pawn = g.op("Unsqueeze", [pawn, g.int64("/policy/promotion/axes3", [3])], "/policy/promotion/moves")
        promo = g.op("Add", [pawn, off], "/policy/promotion/add")  # [B, 8 i, 8 j, 1] + [B, 1, 8 j, 3 r]
        promo = g.reshape(promo, [-1, 8 * 24], "/policy/promotion/reshape")
        flat = g.reshape(logits, [-1, 64 * 64], "/policy/reshape")
        flat = g.op("Concat", [flat, promo], "/policy/concat", axis=1)  # [B, 4288]
        index = g.int64("/const/mapping_table", _policy_gather())
        return g.op("Gather", [flat, index], OUTPUT_POLICY, axis=1)

    def value_output(self, v: str, channels: int, fc1: Dense, fc2: Dense, wdl: bool) -> str:
        """The value head after its per-square layer (``v``: ``channels`` values per square, in the
        body's layout): flatten to ``[B, 64·channels]``, dense1 with the body's default activation,
        dense2, then the WDL softmax (logits without ``wdl_softmax``) or tanh (§9)."""
        g = self.g
        v = g.reshape(v, [-1, 64 * channels], "/value/reshape")
        v = self.dense(v, fc1, "/value/dense1", self.net.default_act)
        v = self.dense(v, fc2, "/value/dense2")
        if wdl:
            if not self.wdl_softmax:
                return g.op("Identity", [v], OUTPUT_WDL)
            return g.op("Softmax", [v], OUTPUT_WDL, axis=-1)
        return g.op("Tanh", [v], OUTPUT_VALUE)

    def moves_left_output(self, m: str, channels: int, fc1: Dense, fc2: Dense) -> str:
        """The moves-left head after its per-square layer, like ``value_output``; the final ReLU
        only when ``ip2_mov_b`` exists (blas, §4.6, §10)."""
        g = self.g
        m = g.reshape(m, [-1, 64 * channels], "/mlh/reshape")
        m = self.dense(m, fc1, "/mlh/dense1", self.net.default_act)
        m = self.dense(m, fc2, "/mlh/dense2")
        if fc2.b is not None:
            return g.op("Relu", [m], OUTPUT_MLH)
        return g.op("Identity", [m], OUTPUT_MLH)

    @staticmethod
    def check_supported(network: Any) -> None:
        """Refuse what the graph cannot express, naming the reason (one ``UnsupportedNetError`` line)."""
        raise NotImplementedError

    @staticmethod
    def label(attention: str) -> str:
        """What ``export-onnx`` says it wrote besides dtype and batch (the body, its attention)."""
        raise NotImplementedError

    def model_props(self) -> dict[str, str]:
        """Metadata of this body beside ``lc0py.attention`` and ``lc0py.fp16``."""
        return {}

    def describe(self, fp16: bool, attention: str) -> str:
        """The model's doc string."""
        raise NotImplementedError

    def build(self) -> tuple[str, str, str | None]:
        """The whole graph: the names of the policy, value and moves-left (``None``: absent) outputs."""
        raise NotImplementedError


def _policy_gather() -> np.ndarray:
    return np.asarray(attention_policy_gather(), dtype=np.int64)

