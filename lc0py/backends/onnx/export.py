"""Export an lc0 network to an ONNX model (``onnx.helper`` only, no torch).

Residual (convolutional) nets are emitted by ``export_residual.py``; this module holds the shared
building blocks and the attention-body graph.

The graph is the forward pass of ``docs/attention-body.md`` with lc0's tensor names:

* input ``/input/planes`` ``[B, 112, 8, 8]``;
* outputs ``/output/policy`` ``[B, 1858]`` (raw logits), ``/output/wdl`` ``[B, 3]`` (softmaxed;
  ``/output/value`` ``[B, 1]`` tanh for classical value heads) and, with a moves-left head,
  ``/output/mlh`` ``[B, 1]``.

``B`` is the dynamic dimension ``batch`` unless ``batch_size`` fixes it. ``fp16=True`` stores
weights and computes in float16 with float16 inputs and outputs, as lc0's converter does for
``f16`` (so lc0's ONNX backends can load the file); LayerNorm statistics are kept in float32
(``stash_type=1``), as lc0's CUDA kernel does.

Exact rewrites made while exporting (scaled weights are computed in float64 and rounded once;
§-refs to docs/attention-body.md), so the graph does less work than a literal transcription:

* PE_MAP (§3.1): ``concat(X, PE)·Wᵀ = X·W[:, :112]ᵀ + PE·W[:, 112:]ᵀ``; the second term is a
  MatMul of two initializers (the ``kPosEncoding`` table and the weight slice) that ONNX Runtime
  folds into a per-square bias at session start. PE_DENSE splits its concat the same way.
* ``1/sqrt(depth)`` is folded into the Q projection and ``1/sqrt(Pd)`` into the policy ``wq``;
  the DeepNorm ``α`` into the attention output dense and FFN ``dense2`` (§4.4: α multiplies the
  sublayer output including its bias, never the skip).
* the promotion offsets fold the knight column into the queen/rook/bishop rows
  (§8: ``Off[r] + Off[3] = Kp·(w4[r] + w4[3])``);
* mish is ``x / (1 + 2/(e² + 2e))``, ``e = exp(x)`` (no Softplus: see ``_Exporter.mish``).

Tokens are 2-D ``[B·64, C]`` between the embedding and the heads, so each dense layer is one
Gemm with its bias fused.

Attention is either plain ONNX (``MatMul``/``Softmax``; runs on every runtime) or ONNX Runtime's
contrib ``com.microsoft.Attention`` with the smolgen bias as ``attention_bias`` (ONNX Runtime
only). On ONNX Runtime's CPU provider the two are equally fast (paired runs: time ratio
plain/contrib 0.95-1.07, median ~1.01, for tiny and T82 at batch 1/8/32; docs/performance.md),
so the default (``DEFAULT_ATTENTION``) is the portable ``plain``; GPU providers may differ.
"""

from __future__ import annotations

import math
from typing import Generic, Literal, TypeVar

import numpy as np

from lc0py.backends.onnx.names import INPUT_PLANES, OUTPUT_MLH, OUTPUT_POLICY, OUTPUT_VALUE, OUTPUT_WDL
from lc0py.errors import BackendUnavailable, UnsupportedNetError
from lc0py.weights.network import (
    Activation,
    Dense,
    EncoderLayer,
    InputEmbedding,
    LayerNorm,
    Network,
    PolicyHead,
)
from lc0py.weights.residual import ResidualNetwork

try:  # the graph helpers need onnx; say how to get it instead of a bare ImportError
    import onnx
    from onnx import helper

    from lc0py.backends.onnx.graph import MS_DOMAIN, GraphBuilder
except ModuleNotFoundError as _exc:  # pragma: no cover - exercised only without onnx
    if _exc.name != "onnx" and not (_exc.name or "").startswith("onnx."):
        raise
    raise BackendUnavailable("the onnx package is not installed (pip install 'lc0py[onnx]')") from None

AttentionKind = Literal["plain", "contrib"]
ATTENTION_KINDS: tuple[str, ...] = ("plain", "contrib")
DEFAULT_ATTENTION: AttentionKind = "plain"
DEFAULT_OPSET = 17
MIN_OPSET = 17  # LayerNormalization


_ACTIVATIONS = {
    Activation.NONE, Activation.RELU, Activation.RELU_2, Activation.MISH, Activation.SWISH,
    Activation.SELU, Activation.TANH, Activation.SIGMOID,
}  # fmt: skip


def network_to_onnx(
    network: Network | ResidualNetwork,
    *,
    fp16: bool = False,
    batch_size: int | None = None,
    opset: int = DEFAULT_OPSET,
    attention: AttentionKind | None = None,
    wdl_softmax: bool = True,
) -> onnx.ModelProto:
    """Build the ONNX model of ``network`` (see the module docstring for names and dtypes).

    ``batch_size=None`` gives a dynamic batch dimension; ``attention`` is ``"plain"`` or
    ``"contrib"`` (``None``: ``DEFAULT_ATTENTION``). ``wdl_softmax=False`` leaves ``/output/wdl``
    as logits, for a caller that takes the softmax in float32 itself (lc0's ONNX backends do the
    same with their in-memory models). Raises ``UnsupportedNetError`` for a net the
    graph cannot express and ``ValueError`` for bad arguments.
    """
    attention = attention or DEFAULT_ATTENTION
    if attention not in ATTENTION_KINDS:
        raise ValueError(f"attention={attention!r} is not one of {', '.join(ATTENTION_KINDS)}")
    if opset < MIN_OPSET:
        raise ValueError(f"opset {opset} is too old: LayerNormalization needs opset >= {MIN_OPSET}")
    if opset > onnx.defs.onnx_opset_version():
        raise ValueError(
            f"opset {opset} is newer than this onnx package knows ({onnx.defs.onnx_opset_version()})"
        )
    if batch_size is not None and batch_size < 1:
        raise ValueError(f"batch_size={batch_size} must be positive (or None for dynamic)")
    float_type = np.float16 if fp16 else np.float32
    exporter: GraphOps[Network] | GraphOps[ResidualNetwork]
    if isinstance(network, ResidualNetwork):
        from lc0py.backends.onnx.export_residual import ResidualExporter, check_residual_supported

        check_residual_supported(network)
        exporter = ResidualExporter(network, float_type, opset, attention, wdl_softmax)
    else:
        _check_supported(network)
        exporter = _Exporter(network, float_type, opset, attention, wdl_softmax)
    policy, value, mlh = exporter.build()

    g = exporter.g
    batch: int | str = "batch" if batch_size is None else batch_size
    inputs = [helper.make_tensor_value_info(INPUT_PLANES, g.onnx_float, [batch, 112, 8, 8])]
    outputs = [helper.make_tensor_value_info(OUTPUT_POLICY, g.onnx_float, [batch, 1858])]
    outputs.append(helper.make_tensor_value_info(value, g.onnx_float, [batch, 3 if network.value.wdl else 1]))
    if mlh is not None:
        outputs.append(helper.make_tensor_value_info(mlh, g.onnx_float, [batch, 1]))
    residual = isinstance(network, ResidualNetwork)
    model = g.model(
        inputs,
        outputs,
        opset=opset,
        graph_name="lc0py_residual" if residual else "lc0py_attention_body",
        producer="lc0py",
        doc=exporter.describe(fp16, attention),
    )
    props = {"lc0py.attention": attention, "lc0py.fp16": str(fp16).lower()}
    if not isinstance(network, ResidualNetwork):
        props["lc0py.heads"] = str(network.heads)
    helper.set_model_props(model, props)
    return model


def _describe(network: Network, fp16: bool, attention: str) -> str:
    return (
        f"lc0 attention-body net: {network.num_layers}x{network.embedding_size} embedding, "
        f"{network.heads} heads, {network.embedding.kind.name} embedding, "
        f"smolgen={'yes' if network.has_smolgen else 'no'}; dtype={'float16' if fp16 else 'float32'}, "
        f"attention={attention}"
    )


def _check_supported(network: Network) -> None:
    """Refuse what the graph cannot express, naming the reason (one line)."""
    if network.embedding.kind not in (InputEmbedding.PE_MAP, InputEmbedding.PE_DENSE):
        kind = network.embedding.kind.name
        raise UnsupportedNetError(f"ONNX export: input embedding {kind} is not supported")
    acts = (("default", network.default_act), ("ffn", network.ffn_act), ("smolgen", network.smolgen_act))
    for place, act in acts:
        if act not in _ACTIVATIONS:
            raise UnsupportedNetError(f"ONNX export: {place} activation {act.name} is not supported")
    if network.heads < 1 or network.d_model % network.heads:
        raise UnsupportedNetError(
            f"ONNX export: {network.heads} heads do not divide d_model {network.d_model}"
        )
    if any(e.smolgen is not None for e in network.encoders) and network.smolgen_w is None:
        raise UnsupportedNetError("ONNX export: layers have smolgen weights but no global smolgen_w")
    if network.value.fc2.n_out not in (1, 3):
        raise UnsupportedNetError(f"ONNX export: value head with {network.value.fc2.n_out} outputs")


def _f64(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, dtype=np.float64)


NetT = TypeVar("NetT", bound=Network | ResidualNetwork)


class GraphOps(Generic[NetT]):
    """The building blocks shared by both bodies' exporters (activations, dense, LayerNorm, the
    attention policy) over one network; every method returns the name of its output tensor."""

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
        w = layer.w.T if scale == 1.0 else _f64(layer.w).T * scale
        y = g.op("MatMul", [x, g.weight(name + "/w/weight", w)], name + "/w")
        if layer.b is None:
            return y
        b = layer.b if scale == 1.0 else _f64(layer.b) * scale
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
        w4 = _f64(pol.promotion)
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

    def describe(self, fp16: bool, attention: str) -> str:
        """The model's doc string."""
        raise NotImplementedError

    def build(self) -> tuple[str, str, str | None]:
        """The whole graph: the names of the policy, value and moves-left (``None``: absent) outputs."""
        raise NotImplementedError


class _Exporter(GraphOps[Network]):
    """Emits the graph of one attention-body network."""

    def describe(self, fp16: bool, attention: str) -> str:
        return _describe(self.net, fp16, attention)

    # --- the network ---
    def build(self) -> tuple[str, str, str | None]:
        h = self.embedding()
        for i, layer in enumerate(self.net.encoders):
            h = self.encoder_layer(h, layer, f"/encoder{i}")
        return self.policy_head(h), self.value_head(h), self.moves_left_head(h)

    def embedding(self) -> str:
        """Planes → tokens ``[B·64, E]`` (§2-§3.5).

        The body works on 2-D ``[B·64, C]`` tensors, as lc0's converter does: ONNX Runtime fuses a
        2-D MatMul with its bias Add into one Gemm (a 3-D MatMul keeps a separate Add pass).
        """
        g, net, emb = self.g, self.net, self.net.embedding
        x = g.reshape(INPUT_PLANES, [-1, 112, 64], "/attn_body/reshape")
        x = g.transpose(x, [0, 2, 1], "/attn_body/transpose")  # [B, 64, 112]: token s, feature p
        w = emb.dense.w
        h = g.op("MatMul", [x, g.weight("/attn_body/planes/weight", w[:, :112].T)], "/attn_body/planes")
        if emb.kind == InputEmbedding.PE_MAP:
            # PE·W[:, 112:]ᵀ: two initializers, folded to a [64, E] constant at session start. In
            # float32 also for float16 models: ONNX Runtime's CPU constant folding has no float16
            # MatMul, and the sum is more precise when rounded once.
            pe = g.float32("/const/pos_encoding", _pos_encoding())
            extra = g.op("MatMul", [pe, g.float32("/attn_body/pe/weight", w[:, 112:].T)], "/attn_body/pe")
            if g.float_type != np.float32:
                extra = g.cast(extra, g.onnx_float, "/attn_body/pe/cast")
        else:
            assert emb.preproc is not None
            p = g.slice(x, [0], [12], [2], "/attn_body/embedding/slice")  # current position's pieces
            p = g.reshape(p, [-1, 64 * 12], "/attn_body/embedding/reshape")
            p = self.dense(p, emb.preproc, "/attn_body/embedding/preprocess")
            p = g.reshape(p, [-1, 64, emb.preproc.n_out // 64], "/attn_body/embedding/preprocess/reshape")
            wp = g.weight("/attn_body/dense_pe/weight", w[:, 112:].T)
            extra = g.op("MatMul", [p, wp], "/attn_body/dense_pe")
        h = g.op("Add", [h, extra], "/attn_body/matmul")
        if emb.dense.b is not None:
            h = g.op("Add", [h, g.weight("/attn_body/bias", emb.dense.b)], "/attn_body/add")
            h = self.activation(h, net.default_act, "/attn_body")
        if emb.kind == InputEmbedding.PE_DENSE:
            assert emb.ln is not None
            h = self.layer_norm(h, emb.ln, "/attn_body/ln")
        if emb.mult_gate is not None and emb.add_gate is not None:  # both or neither (§3.4)
            h = g.op("Mul", [h, g.weight("/const/ip_mul_gate", emb.mult_gate.T)], "/ip_mul_gate")
            h = g.op("Add", [h, g.weight("/const/ip_add_gate", emb.add_gate.T)], "/ip_add_gate")
        h = g.reshape(h, [-1, emb.dense.n_out], "/attn_body/tokens")
        if emb.kind == InputEmbedding.PE_DENSE:
            assert emb.ffn1 is not None and emb.ffn2 is not None and emb.ffn_ln is not None
            f = self.dense(h, emb.ffn1, "/embedding/ffn/dense1", net.ffn_act)
            f = self.dense(f, emb.ffn2, "/embedding/ffn/dense2", scale=net.alpha)
            h = g.op("Add", [f, h], "/embedding/ffn/skip")
            h = self.layer_norm(h, emb.ffn_ln, "/embedding/ffn_ln")
        return h

    def encoder_layer(self, x: str, layer: EncoderLayer, name: str) -> str:
        """One post-LN block (§4): attention, DeepNorm residual, LN, FFN, residual, LN."""
        net = self.net
        bias = self.smolgen(x, layer, name) if layer.smolgen is not None else None
        if self.attention == "contrib":
            o = self.contrib_attention(x, layer, bias, name)
        else:
            o = self.plain_attention(x, layer, net.heads, bias, name)
        return self.attention_output(x, o, layer, net.ffn_act, net.alpha, name)

    def _qkv_weights(self, layer: EncoderLayer) -> tuple[np.ndarray, np.ndarray]:
        """``[E, 3D]`` weights and ``[3D]`` bias of the fused projection (absent bias = 0, §4.6)."""
        parts = (layer.q, layer.k, layer.v)
        w = np.concatenate([d.w.T for d in parts], axis=1)
        b = np.concatenate([d.b if d.b is not None else np.zeros(d.n_out, np.float32) for d in parts])
        return w, b

    def contrib_attention(self, x: str, layer: EncoderLayer, bias: str | None, name: str) -> str:
        """``com.microsoft.Attention``: projection, scaled scores + bias, softmax, values in one op."""
        g, heads = self.g, self.net.heads
        d_model = layer.q.n_out
        w, b = self._qkv_weights(layer)
        x3 = g.reshape(x, [-1, 64, layer.q.n_in], name + "/mha/in/reshape")
        inputs = [x3, g.weight(name + "/mha/QKV/weight", w), g.weight(name + "/mha/QKV/bias", b)]
        if bias is not None:
            inputs += ["", "", bias]  # mask_index, past, attention_bias [B, H, 64, 64]
        o = g.op(
            "Attention",
            inputs,
            name + "/mha/attention",
            domain=MS_DOMAIN,
            num_heads=heads,
            scale=1.0 / math.sqrt(d_model // heads),
        )
        return g.reshape(o, [-1, d_model], name + "/mha/out/reshape")

    def smolgen(self, x: str, layer: EncoderLayer, name: str) -> str:
        """Per-position attention bias ``[B, H, 64, 64]`` from the layer input (§4.3)."""
        g, net = self.g, self.net
        sg = layer.smolgen
        assert sg is not None and net.smolgen_w is not None
        if self._smolgen_w is None:  # [gs, 4096], one initializer shared by all layers
            self._smolgen_w = g.weight("/const/smolgen_w", net.smolgen_w.T)
        hc = sg.hidden_channels
        c = g.op("MatMul", [x, g.weight(name + "/smolgen/compress/weight", sg.compress.T)],
                 name + "/smolgen/compress")  # fmt: skip
        c = g.reshape(c, [-1, 64 * hc], name + "/smolgen/compress/reshape")
        c = self.dense(c, sg.dense1, name + "/smolgen/dense1", net.smolgen_act)
        c = self.layer_norm(c, sg.ln1, name + "/smolgen/ln1")
        c = self.dense(c, sg.dense2, name + "/smolgen/dense2", net.smolgen_act)
        c = self.layer_norm(c, sg.ln2, name + "/smolgen/ln2")
        gs = int(net.smolgen_w.shape[1])
        c = g.reshape(c, [-1, net.heads, gs], name + "/smolgen/gen_from/reshape")
        c = g.op("MatMul", [c, self._smolgen_w], name + "/smolgen/smol_weight_gen")
        return g.reshape(c, [-1, net.heads, 64, 64], name + "/smolgen/out/reshape")

    def policy_head(self, h: str) -> str:
        """Attention policy (§8): from/to logits, promotions, gather into lc0's 1858 order."""
        net = self.net
        p = self.dense(h, net.policy.embedding, "/policy/dense1", net.default_act)
        return self.attention_policy(p, net.policy)

    def value_head(self, h: str) -> str:
        """WDL softmax or classical tanh (§9)."""
        net, head = self.net, self.net.value
        v = self.dense(h, head.embedding, "/value/embed", net.default_act)
        return self.value_output(v, head.embedding.n_out, head.fc1, head.fc2, head.wdl)

    def moves_left_head(self, h: str) -> str | None:
        """Moves-left (§10); the final ReLU only when ``ip2_mov_b`` exists (blas, §4.6)."""
        net, head = self.net, self.net.moves_left
        if head is None:
            return None
        m = self.dense(h, head.embedding, "/mlh/embed", net.default_act)
        return self.moves_left_output(m, head.embedding.n_out, head.fc1, head.fc2)


def _pos_encoding() -> np.ndarray:
    from lc0py.model.tables import pos_encoding_table

    return np.asarray(pos_encoding_table(), dtype=np.float64)


def _policy_gather() -> np.ndarray:
    from lc0py.model.tables import attention_policy_gather

    return np.asarray(attention_policy_gather(), dtype=np.int64)


def output_names(model: onnx.ModelProto) -> list[str]:
    """Names of the model's graph outputs (policy first)."""
    return [o.name for o in model.graph.output]


__all__ = [
    "ATTENTION_KINDS",
    "DEFAULT_ATTENTION",
    "DEFAULT_OPSET",
    "INPUT_PLANES",
    "OUTPUT_MLH",
    "OUTPUT_POLICY",
    "OUTPUT_VALUE",
    "OUTPUT_WDL",
    "network_to_onnx",
    "output_names",
]
