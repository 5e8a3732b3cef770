"""The ONNX graph of an lc0 attention-body network (``network_to_onnx`` in ``export.py`` runs it).

The graph is the forward pass of ``docs/attention-body.md`` with lc0's tensor names; its inputs,
outputs, batch dimension and fp16 mode are ``export.py``'s (its module docstring says them once).

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
* mish is ``x / (1 + 2/(e² + 2e))``, ``e = exp(x)`` (no Softplus: see ``AttentionExporter.mish``).

Tokens are 2-D ``[B·64, C]`` between the embedding and the heads, so each dense layer is one
Gemm with its bias fused.

Attention is plain ONNX or ONNX Runtime's contrib ``com.microsoft.Attention``; ``export.py``
says which is the default and why.
"""

from __future__ import annotations

import math

import numpy as np

from lc0py.backends.onnx.graph import MS_DOMAIN
from lc0py.backends.onnx.graph_ops import GraphOps
from lc0py.backends.onnx.names import INPUT_PLANES
from lc0py.errors import UnsupportedNetError
from lc0py.model.tables import pos_encoding_table
from lc0py.weights.network import Activation, EncoderLayer, InputEmbedding, Network

_ACTIVATIONS = {
    Activation.NONE, Activation.RELU, Activation.RELU_2, Activation.MISH, Activation.SWISH,
    Activation.SELU, Activation.TANH, Activation.SIGMOID,
}  # fmt: skip


def _describe(network: Network, fp16: bool, attention: str) -> str:
    return (
        f"lc0 attention-body net: {network.num_layers}x{network.embedding_size} embedding, "
        f"{network.heads} heads, {network.embedding.kind.name} embedding, "
        f"smolgen={'yes' if network.has_smolgen else 'no'}; dtype={'float16' if fp16 else 'float32'}, "
        f"attention={attention}"
    )


def check_attention_supported(network: Network) -> None:
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


class AttentionExporter(GraphOps[Network]):
    """Emits the graph of one attention-body network."""

    graph_name = "lc0py_attention_body"
    check_supported = staticmethod(check_attention_supported)

    @staticmethod
    def label(attention: str) -> str:
        return f"attention {attention}"

    def model_props(self) -> dict[str, str]:
        return {"lc0py.heads": str(self.net.heads)}

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
    return np.asarray(pos_encoding_table(), dtype=np.float64)

