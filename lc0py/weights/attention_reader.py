"""Read an attention-body (transformer) network from a checked, normalised ``pblczero.Net``.

``check_attention_format`` refuses what lc0py does not run on an attention body (one line naming
the field); ``attention_network_from_proto`` resolves activations, epsilons and the DeepNorm alpha
and checks every array length against the sizes lc0 infers (docs/weights-format.md §6.1), giving
the validated ``Network``. The heads are ``heads.py``'s, shared with the residual body.
"""

from __future__ import annotations

from typing import Any

from lc0py.errors import WeightsFormatError
from lc0py.weights.decode import layer_element_count
from lc0py.weights.heads import (
    attention_policy_head,
    build_heads,
    check_heads_and_activation,
    has_moves_left_weights,
    moves_left_dense,
    policy_sources,
    require_value_head,
    select_head,
    value_dense,
    value_sources,
)
from lc0py.weights.network import (
    Activation,
    DefaultActivation,
    Dense,
    Embedding,
    InputEmbedding,
    MovesLeftFormat,
    MovesLeftHead,
    Network,
    NetworkKind,
    PolicyFormat,
    ValueFormat,
    ValueHead,
)
from lc0py.weights.reader import (
    MAX_WIDTH,
    LayerReader,
    enum_name,
    metadata,
    network_format,
    read_encoder_layer,
    unsupported,
)

_PE_MAP_INPUTS = 176  # 112 planes + 64 positional-encoding columns
_EMBEDDING_EPS = 1e-3


def check_attention_format(net: Any, source: str) -> None:
    """Refuse the attention-body formats lc0py does not run (docs/weights-format.md §8); the checks
    every body shares come first (``loader.check_kind``)."""
    nf = net.format.network_format
    w = net.weights
    kind = int(nf.network)
    if kind not in (NetworkKind.ATTENTIONBODY_WITH_HEADFORMAT,
                    NetworkKind.ATTENTIONBODY_WITH_MULTIHEADFORMAT):
        unsupported(source, f"network format {enum_name(NetworkKind, kind)} is not supported")
    policy = int(nf.policy)
    if policy in (PolicyFormat.CONVOLUTION, PolicyFormat.CLASSICAL):
        unsupported(source, f"{enum_name(PolicyFormat, policy).lower()} policy is not supported with an "
                    "attention body")
    if policy != PolicyFormat.ATTENTION:
        unsupported(source, f"policy format {enum_name(PolicyFormat, policy)} is not supported")
    check_heads_and_activation(nf, source)
    if int(nf.input_embedding) not in (InputEmbedding.NONE, InputEmbedding.PE_MAP, InputEmbedding.PE_DENSE):
        unsupported(source, f"input embedding {int(nf.input_embedding)} is not supported")
    if len(w.encoder) == 0:
        raise WeightsFormatError(f"{source}: attention-body network has no encoder layers")
    for i, layer in enumerate(w.encoder):
        if any(layer.mha.HasField(f) for f in ("rpe_q", "rpe_k", "rpe_v")):
            unsupported(source, f"encoder[{i}] has RPE (relative position encoding) weights; "
                        "RPE networks are not supported (by lc0 either)")


def _resolve(source: str, stored: int, default: Activation, what: str) -> Activation:
    """A stored activation as the body runs it: DEFAULT is the net's default activation."""
    try:
        act = Activation(stored)
    except ValueError:
        unsupported(source, f"{what} activation {stored} is not supported")
    if act == Activation.DEFAULT:
        return default
    if act == Activation.SOFTMAX:
        unsupported(source, f"SOFTMAX is not supported as {what} activation (lc0 refuses it too)")
    return act


def _build_value(r: LayerReader, msg: Any, prefix: str, e: int, wdl: bool, key: str) -> ValueHead:
    require_value_head(r, msg, prefix, key)
    emb = r.dense(msg, "ip_val_w", "ip_val_b", e, prefix, "the value embedding channels")
    return ValueHead(emb, *value_dense(r, msg, prefix, 64 * emb.n_out, wdl))


def _build_embedding(r: LayerReader, w: Any, kind: InputEmbedding) -> Embedding:
    b = r.width(w.ip_emb_b, "ip_emb_b", "the embedding size E")
    e = b.size
    if kind == InputEmbedding.PE_DENSE:
        pre_b = r.width(w.ip_emb_preproc_b, "ip_emb_preproc_b", "the PE_DENSE size dE")
        if pre_b.size % 64:
            r.fail(f"ip_emb_preproc_b has {pre_b.size} values, expected a multiple of 64")
        preproc = Dense(r.array(w.ip_emb_preproc_w, "ip_emb_preproc_w", (pre_b.size, 64 * 12)), pre_b)
        cin = 112 + pre_b.size // 64
    else:
        preproc = None
        cin = _PE_MAP_INPUTS
    emb = Embedding(kind=kind, dense=Dense(r.array(w.ip_emb_w, "ip_emb_w", (e, cin)), b), preproc=preproc)
    if layer_element_count(w.ip_mult_gate) and layer_element_count(w.ip_add_gate):  # blas/CUDA: both
        emb.mult_gate = r.array(w.ip_mult_gate, "ip_mult_gate", (e, 64))
        emb.add_gate = r.array(w.ip_add_gate, "ip_add_gate", (e, 64))
    if kind == InputEmbedding.PE_DENSE:
        emb.ln = r.layer_norm(w, "ip_emb_ln_gammas", "ip_emb_ln_betas", e, _EMBEDDING_EPS, "")
        ffn = w.ip_emb_ffn
        emb.ffn1 = r.dense(ffn, "dense1_w", "dense1_b", e, "ip_emb_ffn.", "the embedding FFN size Fe")
        emb.ffn2 = Dense(
            r.array(ffn.dense2_w, "ip_emb_ffn.dense2_w", (e, emb.ffn1.n_out)),
            r.array(ffn.dense2_b, "ip_emb_ffn.dense2_b", (e,)),
        )
        emb.ffn_ln = r.layer_norm(w, "ip_emb_ffn_ln_gammas", "ip_emb_ffn_ln_betas", e, _EMBEDDING_EPS, "")
    return emb


def attention_network_from_proto(net: Any, policy_head: str, value_head: str, source: str) -> Network:
    """Build the validated attention-body ``Network`` from a checked, normalised ``pblczero.Net``,
    after the checks every body shares; ``source`` prefixes messages."""
    check_attention_format(net, source)
    r = LayerReader(source)
    nf, w = net.format.network_format, net.weights

    default_act = Activation.MISH if nf.default_activation == DefaultActivation.MISH else Activation.RELU
    ffn_act = _resolve(source, int(nf.ffn_activation), default_act, "FFN")
    smolgen_act = _resolve(source, int(nf.smolgen_activation), default_act, "smolgen")
    stored_embedding = InputEmbedding(int(nf.input_embedding))
    # NONE without a residual tower runs as PE_MAP in lc0's blas/CUDA backends (docs/attention-body.md §3.3)
    kind = InputEmbedding.PE_DENSE if stored_embedding == InputEmbedding.PE_DENSE else InputEmbedding.PE_MAP
    eps = 1e-3 if kind == InputEmbedding.PE_DENSE else 1e-6

    embedding = _build_embedding(r, w, kind)
    e = embedding.dense.n_out
    heads = int(w.headcount)
    if heads <= 0:
        r.fail("headcount is missing or zero")
    d_model = r.width(w.encoder[0].mha.q_b, "encoder[0].mha.q_b", "the attention width D").size
    if d_model % heads:
        r.fail(f"headcount {heads} does not divide the attention width D = {d_model}")
    smolgen_w = None
    gs = None
    if any(layer.mha.HasField("smolgen") for layer in w.encoder):
        stored = layer_element_count(w.smolgen_w)
        if stored == 0:
            r.fail("smolgen_w is missing (the encoder layers have smolgen)")
        if stored % 4096:
            r.fail(f"smolgen_w has {stored} values, expected a non-zero multiple of 4096 (4096 x gen size)")
        if stored // 4096 > MAX_WIDTH:  # gen size x heads is a width (dense2_b): refused before decoding
            r.fail(f"smolgen_w has {stored} values; a gen size of {stored // 4096} is above {MAX_WIDTH}")
        sw = r.values(w.smolgen_w, "smolgen_w", expected=stored)
        gs = sw.size // 4096
        smolgen_w = sw.reshape(4096, gs)
    encoders = [read_encoder_layer(r, layer, i, e, heads, d_model, eps, gs)
                for i, layer in enumerate(w.encoder)]

    policies = policy_sources(w, source)
    values = value_sources(w, source)
    select_head("policy", policy_head, policies)
    select_head("value", value_head, values)
    wdl = int(nf.value) == ValueFormat.WDL
    policy, all_policy = build_heads(r, policies, policy_head,
                                     lambda src, key: attention_policy_head(r, src, e, key))
    value, all_value = build_heads(r, values, value_head,
                                   lambda src, key: _build_value(r, src[0], src[1], e, wdl, key))

    moves_left = None
    if int(nf.moves_left) == MovesLeftFormat.V1 and has_moves_left_weights(w, "ip_mov_w", "ip_mov_b"):
        emb = r.dense(w, "ip_mov_w", "ip_mov_b", e, "", "the moves-left embedding channels")
        moves_left = MovesLeftHead(emb, *moves_left_dense(r, w, 64 * emb.n_out))

    return Network(
        format=network_format(nf, source, stored_embedding, moves_left is not None),
        embedding=embedding,
        encoders=encoders,
        heads=heads,
        smolgen_w=smolgen_w,
        policy=policy,
        value=value,
        moves_left=moves_left,
        default_act=default_act,
        ffn_act=ffn_act,
        smolgen_act=smolgen_act,
        alpha=float((2.0 * len(encoders)) ** -0.25),
        encoder_eps=eps,
        **metadata(net, (policy_head, policies, all_policy), (value_head, values, all_value)),
    )

