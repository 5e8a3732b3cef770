"""Read a classical residual (SE-ResNet) network from a checked, normalised ``pblczero.Net``.

``residual_network_from_proto`` builds the typed, validated ``ResidualNetwork``
(``lc0py.weights.residual``); the heads are ``heads.py``'s, shared with the attention body.
Batch-norm statistics are folded into each convolution exactly as lc0 does when it reads a
``ConvBlock`` (``network_legacy.cc``):

* ``bn_betas`` absent: betas = 0 (and gammas = 1 unless stored); ``biases`` absent: zeros;
* ``g = gamma / sqrt(bn_stddivs + 1e-5)`` (``bn_stddivs`` holds the variance), in float32;
* ``w[o] *= g[o]``, ``b[o] = beta[o] - g[o] * (mean[o] - bias[o])``;
* no ``bn_means``: no batch norm, the stored weights and biases are used as they are.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lc0py.weights.decode import layer_element_count
from lc0py.weights.heads import (
    PolicySource,
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
    InputEmbedding,
    MovesLeftFormat,
    NetworkKind,
    PolicyFormat,
    ValueFormat,
)
from lc0py.weights.reader import (
    LayerReader,
    enum_name,
    metadata,
    network_format,
    read_encoder_layer,
    unsupported,
)
from lc0py.weights.residual import (
    CONV_POLICY_PLANES,
    POLICY_ENCODER_EPS,
    RESIDUAL_KINDS,
    ClassicalPolicyHead,
    Conv,
    ConvMovesLeftHead,
    ConvPolicyHead,
    ConvValueHead,
    ResidualAttentionPolicyHead,
    ResidualBlock,
    ResidualNetwork,
    ResidualPolicy,
    SEUnit,
)

#: lc0's ``kEpsilon`` for folding batch norm into convolutions (network_legacy.cc).
BN_EPSILON = np.float32(1e-5)


def fold_batch_norm(weights: np.ndarray, biases: np.ndarray, means: np.ndarray, variances: np.ndarray,
                    gammas: np.ndarray, betas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Fold batch norm into ``weights [out, ...]`` and ``biases [out]`` in float32, as lc0 does.

    ``biases``, ``gammas`` and ``betas`` must already be filled (lc0's defaults: 0, 1, 0).
    """
    one = np.float32(1.0)
    g = gammas.astype(np.float32) * (one / np.sqrt(variances.astype(np.float32) + BN_EPSILON))
    centred = means.astype(np.float32) - biases.astype(np.float32)
    w = weights.astype(np.float32) * g.reshape((-1,) + (1,) * (weights.ndim - 1))
    b = (-g * centred + betas.astype(np.float32)).astype(np.float32)
    return w.astype(np.float32), b


def _conv(r: LayerReader, msg: Any, name: str, n_in: int, kernel: int, n_out: int | None = None) -> Conv:
    """Decode one ``ConvBlock``, fold its batch norm, and check every length: the lengths are
    checked on the stored byte counts first, so a layer declaring a gigabyte is refused before
    anything is decoded (the attention body's rule, ``LayerReader.values(expected=...)``)."""
    count = layer_element_count
    if count(msg.weights) == 0:
        r.fail(f"{name}.weights is missing")
    out = count(msg.bn_means) or count(msg.biases)
    if out == 0:
        r.fail(f"{name}: neither biases nor bn_means are present (lc0 reads the channel count from them)")
    if n_out is not None and out != n_out:
        r.fail(f"{name} has {out} output channels, expected {n_out}")
    for what in ("biases", "bn_stddivs", "bn_gammas", "bn_betas"):
        stored = count(getattr(msg, what))
        if stored not in (0, out):
            r.fail(f"{name}.{what} has {stored} values, expected {out}")
    per_out = n_in * kernel * kernel
    weights = r.array(msg.weights, name + ".weights", (out, n_in, kernel, kernel)).reshape(-1)
    biases = r.values(msg.biases, name + ".biases")
    means = r.values(msg.bn_means, name + ".bn_means")
    variances = r.values(msg.bn_stddivs, name + ".bn_stddivs")
    gammas = r.values(msg.bn_gammas, name + ".bn_gammas")
    betas = r.values(msg.bn_betas, name + ".bn_betas")
    if weights.size != out * per_out:
        r.fail(f"{name}.weights has {weights.size} values, expected {out * per_out} "
               f"({out}x{n_in}x{kernel}x{kernel})")
    w = weights.reshape(out, n_in, kernel, kernel)
    if means.size == 0:
        return Conv(w, biases)
    if biases.size == 0:
        biases = np.zeros(out, np.float32)
    if betas.size == 0:  # old nets without gamma and beta
        betas = np.zeros(out, np.float32)
        if gammas.size == 0:
            gammas = np.ones(out, np.float32)
    for what, arr in ((".biases", biases), (".bn_stddivs", variances), (".bn_gammas", gammas),
                      (".bn_betas", betas)):
        if arr.size != out:
            r.fail(f"{name}{what} has {arr.size} values, expected {out}")
    fw, fb = fold_batch_norm(w, biases, means, variances, gammas, betas)
    return Conv(fw, fb)


def _se(r: LayerReader, msg: Any, name: str, channels: int) -> SEUnit:
    b1 = r.width(msg.b1, name + ".b1", "the SE hidden size")
    fc1 = Dense(r.array(msg.w1, name + ".w1", (b1.size, channels)), b1)
    fc2 = Dense(r.array(msg.w2, name + ".w2", (2 * channels, b1.size)),
                r.array(msg.b2, name + ".b2", (2 * channels,)))
    return SEUnit(fc1, fc2)


def _value_head(r: LayerReader, msg: Any, prefix: str, channels: int, wdl: bool, key: str) -> ConvValueHead:
    require_value_head(r, msg, prefix, key)
    conv = _conv(r, msg.value, prefix + "value", channels, 1)
    return ConvValueHead(conv, *value_dense(r, msg, prefix, 64 * conv.n_out, wdl))


def _policy_head(r: LayerReader, src: PolicySource, policy_format: int, channels: int, pol_headcount: int,
                 key: str) -> ResidualPolicy:
    m, p = src.msg, src.prefix
    if policy_format == PolicyFormat.ATTENTION:
        return _attention_policy(r, src, channels, pol_headcount, key)
    if layer_element_count(m.policy.weights) == 0:
        r.fail(f"the policy head selected '{key}' is empty ({p}policy.weights is missing)")
    if policy_format == PolicyFormat.CONVOLUTION:
        if layer_element_count(m.policy1.weights) == 0:
            r.fail(f"{p}policy1.weights is missing (convolution policy needs two convolutions)")
        conv1 = _conv(r, m.policy1, p + "policy1", channels, 3, channels)
        conv2 = _conv(r, m.policy, p + "policy", channels, 3)
        if conv2.n_out < CONV_POLICY_PLANES:
            r.fail(f"{p}policy has {conv2.n_out} output channels; the convolution policy map needs "
                   f"at least {CONV_POLICY_PLANES}")
        return ConvPolicyHead(conv1, conv2)
    if policy_format == PolicyFormat.CLASSICAL:
        conv = _conv(r, m.policy, p + "policy", channels, 1)
        emb_w, emb_b = src.emb_w, src.emb_b
        b = r.array(emb_b[0], emb_b[1], (1858,))
        fc = Dense(r.array(emb_w[0], emb_w[1], (1858, 64 * conv.n_out)), b)
        return ClassicalPolicyHead(conv, fc)
    unsupported(r.source, f"policy format {policy_format} is not supported on a residual body")


def _attention_policy(r: LayerReader, src: PolicySource, channels: int, pol_headcount: int,
                      key: str) -> ResidualAttentionPolicyHead:
    m, p = src.msg, src.prefix
    if len(m.pol_encoder) == 0:
        return ResidualAttentionPolicyHead(attention_policy_head(r, src, channels, key))
    for i, layer in enumerate(m.pol_encoder):
        if layer.mha.HasField("smolgen"):
            unsupported(r.source, f"{p}pol_encoder[{i}] has smolgen, which lc0 does not run in policy "
                        "encoders")
    # build the head around a copy without its encoders (the attention-body builder refuses them)
    msg = type(m)()
    msg.CopyFrom(m)
    msg.ClearField("pol_encoder")
    src_copy = type(src)(msg, p, src.emb_w, src.emb_b)
    head = attention_policy_head(r, src_copy, channels, key)
    pe = head.embedding.n_out
    heads = int(pol_headcount)
    if heads <= 0:
        r.fail(f"{p}pol_headcount is missing or zero (the policy has encoder layers)")
    d0 = r.width(m.pol_encoder[0].mha.q_b, f"{p}pol_encoder[0].mha.q_b", "the policy encoder width")
    if d0.size % heads:
        r.fail(f"{p}pol_headcount {heads} does not divide the policy encoder width {d0.size}")
    encoders = [read_encoder_layer(r, layer, i, pe, heads, d0.size, POLICY_ENCODER_EPS, None)
                for i, layer in enumerate(m.pol_encoder)]
    return ResidualAttentionPolicyHead(head, encoders, heads)


def check_residual_format(net: Any, source: str) -> None:
    """Refuse a residual tower whose network format is not a residual one (the checks every body
    shares come first: ``loader.check_kind``): 0 (lc0: "NETWORK_UNKNOWN is not supported"), or 6/7
    on a residual tower, which lc0 runs as a hybrid without encoders, not as a residual net."""
    kind = int(net.format.network_format.network)
    if len(net.weights.residual) > 0 and kind not in RESIDUAL_KINDS:
        unsupported(source, f"network format {enum_name(NetworkKind, kind)} does not describe the "
                    "residual tower this file holds (lc0 refuses or runs it as another net)")


def residual_network_from_proto(net: Any, policy_head: str, value_head: str, source: str) -> ResidualNetwork:
    """Build the ``ResidualNetwork`` from a checked, normalised ``pblczero.Net``."""
    check_residual_format(net, source)
    r = LayerReader(source)
    nf, w = net.format.network_format, net.weights
    if len(w.residual) == 0:
        r.fail("residual network has no residual blocks")
    policy_format = int(nf.policy)
    if policy_format not in (PolicyFormat.CLASSICAL, PolicyFormat.CONVOLUTION, PolicyFormat.ATTENTION):
        unsupported(source, f"policy format {policy_format} is not supported on a residual body")
    check_heads_and_activation(nf, source)
    value_format = int(nf.value)

    stored = layer_element_count(w.input.weights)  # counted, not decoded: _conv decodes it once checked
    if stored == 0 or stored % (112 * 9):
        r.fail(f"input.weights has {stored} values, expected a non-zero multiple of {112 * 9} "
               "(C x 112 x 3 x 3)")
    channels = stored // (112 * 9)
    input_conv = _conv(r, w.input, "input", 112, 3, channels)
    blocks = []
    for i, res in enumerate(w.residual):
        name = f"residual[{i}]"
        conv1 = _conv(r, res.conv1, name + ".conv1", channels, 3, channels)
        conv2 = _conv(r, res.conv2, name + ".conv2", channels, 3, channels)
        se = _se(r, res.se, name + ".se", channels) if res.HasField("se") else None
        blocks.append(ResidualBlock(conv1, conv2, se))

    policies = policy_sources(w, source)
    values = value_sources(w, source)
    select_head("policy", policy_head, policies)
    select_head("value", value_head, values)
    wdl = value_format == ValueFormat.WDL
    pol_headcount = int(w.pol_headcount)
    policy, all_policy = build_heads(
                                     r, policies, policy_head,
        lambda src, key: _policy_head(r, src, policy_format, channels,
                                      int(src.msg.pol_headcount) or pol_headcount, key))
    value, all_value = build_heads(r, values, value_head,
                                   lambda src, key: _value_head(r, src[0], src[1], channels, wdl, key))

    moves_left = None
    if int(nf.moves_left) == MovesLeftFormat.V1 and has_moves_left_weights(w, "moves_left"):
        conv = _conv(r, w.moves_left, "moves_left", channels, 1)
        moves_left = ConvMovesLeftHead(conv, *moves_left_dense(r, w, 64 * conv.n_out))

    default_act = Activation.MISH if nf.default_activation == DefaultActivation.MISH else Activation.RELU
    return ResidualNetwork(
        format=network_format(nf, source, _embedding_value(int(nf.input_embedding)), moves_left is not None),
        input=input_conv,
        blocks=blocks,
        policy=policy,
        value=value,
        moves_left=moves_left,
        default_act=default_act,
        **metadata(net, (policy_head, policies, all_policy), (value_head, values, all_value)),
    )


def _embedding_value(value: int) -> InputEmbedding:
    try:
        return InputEmbedding(value)
    except ValueError:
        return InputEmbedding.NONE
