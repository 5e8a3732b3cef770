"""Classical residual (convolutional, optionally squeeze-and-excitation) lc0 networks.

The T40-T80 era nets, Maia and the small "gyal" nets: an input 3x3 convolution, a tower of
residual blocks (two 3x3 convolutions, an optional SE unit, a skip connection), then a
convolution, classical (dense) or attention policy head, a value head and an optional
moves-left head. ``docs/residual-body.md`` describes the computation with lc0 source references.

``residual_network_from_proto`` builds the typed, validated ``ResidualNetwork`` from a parsed
``pblczero.Net`` (already normalised by ``FixOlderWeightsFile``). Batch-norm statistics are folded
into each convolution exactly as lc0 does when it reads a ``ConvBlock`` (``network_legacy.cc``):

* ``bn_betas`` absent: betas = 0 (and gammas = 1 unless stored); ``biases`` absent: zeros;
* ``g = gamma / sqrt(bn_stddivs + 1e-5)`` (``bn_stddivs`` holds the variance), in float32;
* ``w[o] *= g[o]``, ``b[o] = beta[o] - g[o] * (mean[o] - bias[o])``;
* no ``bn_means``: no batch norm, the stored weights and biases are used as they are.

Array layouts are lc0's: convolution weights ``[out, in, k, k]`` (k = 3 or 1), dense ``[out, in]``;
a dense layer after a convolution reads the ``[channels, 64]`` map flattened channel-major
(index ``c*64 + square``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lc0py.weights.decode import layer_element_count
from lc0py.weights.network import (
    Activation,
    BaseNetwork,
    DefaultActivation,
    Dense,
    EncoderLayer,
    MovesLeftFormat,
    NetworkKind,
    PolicyFormat,
    PolicyHead,
    ValueFormat,
    WeightedLayer,
)

#: lc0's ``kEpsilon`` for folding batch norm into convolutions (network_legacy.cc).
BN_EPSILON = np.float32(1e-5)
#: Planes of lc0's convolution policy map (``kPolicyUsedPlanes``): 56 queen-line + 8 knight + 9
#: under-promotion planes of 64 squares each.
CONV_POLICY_PLANES = 73
#: Output channels lc0's ONNX converter assumes for the second policy convolution.
CONV_POLICY_CHANNELS = 80
#: Policy-encoder layers on a residual body use LayerNorm epsilon 1e-6 and no DeepNorm scaling.
POLICY_ENCODER_EPS = 1e-6
RESIDUAL_KINDS = (NetworkKind.CLASSICAL_WITH_HEADFORMAT, NetworkKind.SE_WITH_HEADFORMAT)


@dataclass
class Conv(WeightedLayer):
    """A convolution with batch norm already folded in: ``w [out, in, k, k]``, ``b [out]``."""

    w: np.ndarray
    b: np.ndarray

    @property
    def kernel(self) -> int:
        return int(self.w.shape[2])


@dataclass
class SEUnit:
    """Squeeze-and-excitation: ``fc1 [S, C]`` (default activation), ``fc2 [2C, S]`` (scale | bias)."""

    fc1: Dense
    fc2: Dense


@dataclass
class ResidualBlock:
    conv1: Conv
    conv2: Conv
    se: SEUnit | None = None


@dataclass
class ConvPolicyHead:
    """``conv1`` 3x3 C->C (+ default activation), ``conv2`` 3x3 C->P (P >= 73, no activation),
    then lc0's 73x64 -> 1858 policy map."""

    conv1: Conv
    conv2: Conv


@dataclass
class ClassicalPolicyHead:
    """``conv`` 1x1 C->P (+ default activation), then ``fc`` [1858, 64P] (no activation)."""

    conv: Conv
    fc: Dense


@dataclass
class ResidualAttentionPolicyHead:
    """Attention policy on a residual body (T78-T80 era "apmish" nets).

    The embedding uses SELU (hard-coded by lc0 for non-attention bodies), optional policy encoder
    layers run with SELU FFNs, no DeepNorm scaling and LayerNorm epsilon 1e-6, then the same
    Q·K / promotion logits as the attention body's policy head.
    """

    head: PolicyHead
    encoders: list[EncoderLayer] = field(default_factory=list)
    encoder_heads: int = 0


ResidualPolicy = ConvPolicyHead | ClassicalPolicyHead | ResidualAttentionPolicyHead


@dataclass
class ConvValueHead:
    """``conv`` 1x1 C->Vc (+act), ``fc1`` [Vh, 64Vc] (+act), ``fc2`` [3 or 1, Vh]."""

    conv: Conv
    fc1: Dense
    fc2: Dense

    @property
    def wdl(self) -> bool:
        return self.fc2.n_out == 3


@dataclass
class ConvMovesLeftHead:
    """``conv`` 1x1 C->Mc (+act), ``fc1`` [Mh, 64Mc] (+act), ``fc2`` [1, Mh] (+ReLU if biased)."""

    conv: Conv
    fc1: Dense
    fc2: Dense


@dataclass
class ResidualNetwork(BaseNetwork):
    """A loaded classical residual network with the selected policy/value heads.

    Shares the attributes search and the backends read from an attention ``Network``
    (``BaseNetwork``: ``format``, ``has_wdl``, head names, ``license``, ``min_version``) and
    ``has_moves_left``.
    """

    input: Conv  # 3x3, 112 -> C
    blocks: list[ResidualBlock]
    policy: ResidualPolicy
    value: ConvValueHead
    moves_left: ConvMovesLeftHead | None
    default_act: Activation

    @property
    def filters(self) -> int:
        """``C``, the tower width."""
        return self.input.n_out

    @property
    def num_blocks(self) -> int:
        return len(self.blocks)

    @property
    def se_blocks(self) -> int:
        return sum(1 for b in self.blocks if b.se is not None)

    @property
    def has_moves_left(self) -> bool:
        return self.moves_left is not None

    def flops_per_position(self) -> int:
        """Multiply-add FLOPs (2 per MAC) of one forward pass (direct convolution, no Winograd)."""
        sq = 64
        c = self.filters

        def conv(cv: Conv) -> int:
            return 2 * sq * cv.n_in * cv.n_out * cv.kernel * cv.kernel

        def fc(d: Dense) -> int:
            return 2 * d.n_in * d.n_out

        fl = conv(self.input)
        for block in self.blocks:
            fl += conv(block.conv1) + conv(block.conv2)
            if block.se is not None:
                fl += fc(block.se.fc1) + fc(block.se.fc2)
        p = self.policy
        if isinstance(p, ConvPolicyHead):
            fl += conv(p.conv1) + conv(p.conv2)
        elif isinstance(p, ClassicalPolicyHead):
            fl += conv(p.conv) + fc(p.fc)
        else:
            h = p.head
            pe, pd = h.embedding.n_out, h.wq.n_out
            fl += 2 * sq * c * pe + 2 * 2 * sq * pe * pd + 2 * sq * sq * pd + 2 * 8 * pd * 4
            for layer in p.encoders:
                d = layer.q.n_out
                fl += 2 * sq * pe * d * 4 + 2 * sq * sq * d * 2 + 2 * 2 * sq * pe * layer.ffn1.n_out
        v = self.value
        fl += conv(v.conv) + fc(v.fc1) + fc(v.fc2)
        if self.moves_left is not None:
            m = self.moves_left
            fl += conv(m.conv) + fc(m.fc1) + fc(m.fc2)
        return fl


# --------------------------------------------------------------------------------------------
# building from the proto


def is_residual(net: Any) -> bool:
    """True when the (normalised) file holds a residual tower and no attention body."""
    w = net.weights
    kind = int(net.format.network_format.network)
    return len(w.encoder) == 0 and (len(w.residual) > 0 or kind in RESIDUAL_KINDS)


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


def _conv(r: Any, msg: Any, name: str, n_in: int, kernel: int, n_out: int | None = None) -> Conv:
    """Decode one ``ConvBlock``, fold its batch norm, and check every length: the lengths are
    checked on the stored byte counts first, so a layer declaring a gigabyte is refused before
    anything is decoded (the attention body's rule, ``_Reader.values(expected=...)``)."""
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


def _se(r: Any, msg: Any, name: str, channels: int) -> SEUnit:
    b1 = r.width(msg.b1, name + ".b1", "the SE hidden size")
    fc1 = Dense(r.array(msg.w1, name + ".w1", (b1.size, channels)), b1)
    fc2 = Dense(r.array(msg.w2, name + ".w2", (2 * channels, b1.size)),
                r.array(msg.b2, name + ".b2", (2 * channels,)))
    return SEUnit(fc1, fc2)


def _value_head(r: Any, msg: Any, prefix: str, channels: int, wdl: bool, key: str) -> ConvValueHead:
    from lc0py.weights.loader import _require_value_head, _value_dense

    _require_value_head(r, msg, prefix, key)
    conv = _conv(r, msg.value, prefix + "value", channels, 1)
    return ConvValueHead(conv, *_value_dense(r, msg, prefix, 64 * conv.n_out, wdl))


def _policy_head(r: Any, src: Any, policy_format: int, channels: int, pol_headcount: int,
                 key: str) -> ResidualPolicy:
    from lc0py.weights.loader import _unsupported

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
    _unsupported(r.source, f"policy format {policy_format} is not supported on a residual body")


def _attention_policy(r: Any, src: Any, channels: int, pol_headcount: int,
                      key: str) -> ResidualAttentionPolicyHead:
    from lc0py.weights.loader import _build_encoder, _build_policy, _unsupported

    m, p = src.msg, src.prefix
    if len(m.pol_encoder) == 0:
        return ResidualAttentionPolicyHead(_build_policy(r, src, channels, key))
    for i, layer in enumerate(m.pol_encoder):
        if layer.mha.HasField("smolgen"):
            _unsupported(r.source, f"{p}pol_encoder[{i}] has smolgen, which lc0 does not run in policy "
                         "encoders")
    # build the head around a copy without its encoders (the attention-body builder refuses them)
    msg = type(m)()
    msg.CopyFrom(m)
    msg.ClearField("pol_encoder")
    src_copy = type(src)(msg, p, src.emb_w, src.emb_b)
    head = _build_policy(r, src_copy, channels, key)
    pe = head.embedding.n_out
    heads = int(pol_headcount)
    if heads <= 0:
        r.fail(f"{p}pol_headcount is missing or zero (the policy has encoder layers)")
    d0 = r.width(m.pol_encoder[0].mha.q_b, f"{p}pol_encoder[0].mha.q_b", "the policy encoder width")
    if d0.size % heads:
        r.fail(f"{p}pol_headcount {heads} does not divide the policy encoder width {d0.size}")
    encoders = [_build_encoder(r, layer, i, pe, heads, d0.size, POLICY_ENCODER_EPS, None)
                for i, layer in enumerate(m.pol_encoder)]
    return ResidualAttentionPolicyHead(head, encoders, heads)


def residual_network_from_proto(net: Any, policy_head: str, value_head: str, source: str) -> ResidualNetwork:
    """Build the ``ResidualNetwork`` from a checked, normalised ``pblczero.Net``."""
    from lc0py.weights.loader import (
        _build_heads,
        _check_heads_and_activation,
        _metadata,
        _moves_left_dense,
        _network_format,
        _policy_sources,
        _Reader,
        _select,
        _unsupported,
        _value_sources,
        has_moves_left_weights,
    )

    r = _Reader(source)
    nf, w = net.format.network_format, net.weights
    if len(w.residual) == 0:
        r.fail("residual network has no residual blocks")
    policy_format = int(nf.policy)
    if policy_format not in (PolicyFormat.CLASSICAL, PolicyFormat.CONVOLUTION, PolicyFormat.ATTENTION):
        _unsupported(source, f"policy format {policy_format} is not supported on a residual body")
    _check_heads_and_activation(nf, source)
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

    policy_sources = _policy_sources(w, source)
    value_sources = _value_sources(w, source)
    _select("policy", policy_head, policy_sources)
    _select("value", value_head, value_sources)
    wdl = value_format == ValueFormat.WDL
    pol_headcount = int(w.pol_headcount)
    policy, all_policy = _build_heads(
        r, policy_sources, policy_head,
        lambda src, key: _policy_head(r, src, policy_format, channels,
                                      int(src.msg.pol_headcount) or pol_headcount, key))
    value, all_value = _build_heads(r, value_sources, value_head,
                                    lambda src, key: _value_head(r, src[0], src[1], channels, wdl, key))

    moves_left = None
    if int(nf.moves_left) == MovesLeftFormat.V1 and has_moves_left_weights(w, "moves_left"):
        conv = _conv(r, w.moves_left, "moves_left", channels, 1)
        moves_left = ConvMovesLeftHead(conv, *_moves_left_dense(r, w, 64 * conv.n_out))

    default_act = Activation.MISH if nf.default_activation == DefaultActivation.MISH else Activation.RELU
    return ResidualNetwork(
        format=_network_format(nf, source, _embedding_value(int(nf.input_embedding)), moves_left is not None),
        input=input_conv,
        blocks=blocks,
        policy=policy,
        value=value,
        moves_left=moves_left,
        default_act=default_act,
        **_metadata(net, (policy_head, policy_sources, all_policy), (value_head, value_sources, all_value)),
    )


def _embedding_value(value: int) -> Any:
    from lc0py.weights.network import InputEmbedding

    try:
        return InputEmbedding(value)
    except ValueError:
        return InputEmbedding.NONE


__all__ = [
    "BN_EPSILON", "CONV_POLICY_CHANNELS", "CONV_POLICY_PLANES", "ClassicalPolicyHead", "Conv",
    "ConvMovesLeftHead", "ConvPolicyHead", "ConvValueHead", "ResidualAttentionPolicyHead",
    "ResidualBlock", "ResidualNetwork", "ResidualPolicy", "SEUnit", "fold_batch_norm", "is_residual",
    "residual_network_from_proto",
]
