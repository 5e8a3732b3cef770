"""Generated residual networks: the shape (``ResidualPreset``) and a deterministic random
``ResidualNetwork``.

Every array comes from one ``numpy.random.default_rng(seed)`` stream in a fixed order. Scaling
keeps activations O(1) through deep towers (convolution weights ``N(0, gain²/fan_in)``, the second
convolution of each block damped so the residual sum grows slowly) and the input column of the
rule-50 plane (values up to 100 in the classical input format) small, so that policy logits have a
standard deviation of about 1-3 and the value head is not saturated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from lc0py.errors import UsageError
from lc0py.weights.generation import DEFAULT_ACTIVATIONS, LayerGenerator, check_input_format
from lc0py.weights.network import (
    Activation,
    BodyKind,
    DefaultActivation,
    Dense,
    EncoderLayer,
    InputEmbedding,
    InputFormat,
    MovesLeftFormat,
    NetworkFormat,
    NetworkKind,
    OutputFormat,
    PolicyFormat,
    PolicyHead,
    ValueFormat,
)
from lc0py.weights.residual import (
    POLICY_ENCODER_EPS,
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

RESIDUAL_POLICIES = ("convolution", "classical", "attention")


@dataclass(frozen=True)
class ResidualPreset:
    """The shape and format of a generated classical residual (SE-ResNet) network."""

    body: ClassVar[BodyKind] = "residual"
    depth_field: ClassVar[str] = "blocks"  # the setting ``--layers`` overrides (tools)

    blocks: int
    filters: int  # C
    se: bool = True
    se_hidden: int = 32  # SE fc1 outputs
    policy: str = "convolution"  # convolution | classical | attention
    policy_channels: int = 80  # convolution: P >= 73 (lc0's nets: 80); classical: 1x1 conv outputs
    policy_embedding: int = 64  # attention: Pe
    policy_dmodel: int = 64  # attention: Pd
    policy_encoders: int = 0  # attention: policy encoder layers
    policy_encoder_heads: int = 4
    policy_encoder_ffn: int = 128
    value_channels: int = 32
    value_hidden: int = 128
    moves_left: bool = True
    moves_left_channels: int = 8
    moves_left_hidden: int = 128
    default_activation: str = "mish"  # relu | mish
    input_format: int = int(InputFormat.CLASSICAL_112_PLANE)
    wdl: bool = True

    def validated(self) -> ResidualPreset:
        """Return self, or raise ``UsageError`` naming the first inconsistent setting."""
        positive = ("blocks", "filters", "se_hidden", "policy_channels", "policy_embedding", "policy_dmodel",
                    "policy_encoder_heads", "policy_encoder_ffn", "value_channels", "value_hidden",
                    "moves_left_channels", "moves_left_hidden")
        for name in positive:
            if int(getattr(self, name)) <= 0:
                raise UsageError(f"{name} must be positive (got {getattr(self, name)})")
        if self.policy not in RESIDUAL_POLICIES:
            raise UsageError(f"policy '{self.policy}': unknown (available: {', '.join(RESIDUAL_POLICIES)})")
        if self.policy == "convolution" and self.policy_channels < 73:
            raise UsageError(f"policy_channels {self.policy_channels}: a convolution policy needs >= 73")
        if self.policy_encoders < 0:
            raise UsageError(f"policy_encoders must not be negative (got {self.policy_encoders})")
        if self.policy_encoders and self.policy_embedding % self.policy_encoder_heads:
            raise UsageError(f"policy_encoder_heads ({self.policy_encoder_heads}) must divide the policy "
                             f"embedding size ({self.policy_embedding})")
        if self.default_activation not in DEFAULT_ACTIVATIONS:
            raise UsageError(
                f"default activation '{self.default_activation}': unknown (available: relu, mish)")
        check_input_format(self.input_format)
        return self

    def summary(self) -> str:
        return (f"{self.blocks}x{self.filters} residual{' SE' if self.se else ''}, {self.policy} policy, "
                f"{'WDL' if self.wdl else 'classical'} value")

    def estimated_parameters(self) -> int:
        """A lower bound on the parameter count (input conv + two 3x3 convolutions per block),
        without generating."""
        return 112 * 9 * self.filters + self.blocks * 18 * self.filters * self.filters


_RULE50_PLANE = 109
POLICY_GAIN = 6.0  # convolution/classical policy output: logits with a standard deviation of ~1-3
_POLICY_FORMATS = {
    "convolution": PolicyFormat.CONVOLUTION,
    "classical": PolicyFormat.CLASSICAL,
    "attention": PolicyFormat.ATTENTION,
}


def _conv(g: LayerGenerator, n_out: int, n_in: int, kernel: int, gain: float = 1.0) -> Conv:
    w = g.normal((n_out, n_in, kernel, kernel), gain / np.sqrt(n_in * kernel * kernel))
    return Conv(w, g.normal((n_out,), 0.05))


def _branch_gain(blocks: int, act: Activation) -> float:
    """Gain of each block's second convolution.

    Without batch norm a random residual tower is unstable with depth (growth per block depends on
    the seed); these gains keep 20-block towers O(1) and damp deeper ones, at the price of a weaker
    dependence on the position in 40-block towers (random presets measure speed, not chess).
    """
    base = 0.9 if act == Activation.MISH else 0.7
    return base * float(np.sqrt(20.0 / max(blocks, 20)))


def _policy(g: LayerGenerator, c: ResidualPreset) -> ResidualPolicy:
    f = c.filters
    if c.policy == "convolution":
        conv1 = _conv(g, f, f, 3, gain=1.4)
        return ConvPolicyHead(conv1, _conv(g, c.policy_channels, f, 3, gain=POLICY_GAIN))
    if c.policy == "classical":
        return ClassicalPolicyHead(_conv(g, c.policy_channels, f, 1, gain=1.4),
                                   g.dense(1858, 64 * c.policy_channels, gain=POLICY_GAIN))
    pe, pd = c.policy_embedding, c.policy_dmodel
    embedding = g.dense(pe, f)
    encoders = []
    for _ in range(c.policy_encoders):
        q, k, v, out = g.dense(pe, pe), g.dense(pe, pe), g.dense(pe, pe), g.dense(pe, pe)
        ln1 = g.layer_norm(pe, POLICY_ENCODER_EPS)
        ffn1, ffn2 = g.dense(c.policy_encoder_ffn, pe), g.dense(pe, c.policy_encoder_ffn)
        ln2 = g.layer_norm(pe, POLICY_ENCODER_EPS)
        encoders.append(EncoderLayer(q, k, v, out, ln1, ffn1, ffn2, ln2, None))
    wq = g.dense(pd, pe, gain=2.3)
    wk = g.dense(pd, pe, gain=2.3)
    promo = g.normal((4, pd), 1.0 / np.sqrt(pd))
    heads = c.policy_encoder_heads if encoders else 0
    return ResidualAttentionPolicyHead(PolicyHead(embedding, wq, wk, promo), encoders, heads)


def random_residual_network(c: ResidualPreset, seed: int, name: str) -> ResidualNetwork:
    """A deterministic random-weight residual network of shape ``c`` (already validated)."""
    g = LayerGenerator(seed)
    f = c.filters
    act = Activation.MISH if c.default_activation == "mish" else Activation.RELU
    inp = _conv(g, f, 112, 3, gain=4.0)
    inp.w[:, _RULE50_PLANE] *= np.float32(0.01)
    blocks = []
    for _ in range(c.blocks):
        conv1 = _conv(g, f, f, 3, gain=1.4)
        conv2 = _conv(g, f, f, 3, gain=_branch_gain(c.blocks, act))
        se = SEUnit(g.dense(c.se_hidden, f), g.dense(2 * f, c.se_hidden)) if c.se else None
        blocks.append(ResidualBlock(conv1, conv2, se))
    policy = _policy(g, c)
    value = ConvValueHead(_conv(g, c.value_channels, f, 1),
                          g.dense(c.value_hidden, 64 * c.value_channels, gain=2.0),
                          g.dense(3 if c.wdl else 1, c.value_hidden, bias_std=0.1))
    moves_left = None
    if c.moves_left:
        fc2 = Dense(g.normal((1, c.moves_left_hidden), 1.0 / np.sqrt(c.moves_left_hidden)),
                    np.array([2.0], dtype=np.float32) + g.normal((1,), 0.1))
        fc1 = g.dense(c.moves_left_hidden, 64 * c.moves_left_channels, gain=2.0)
        moves_left = ConvMovesLeftHead(_conv(g, c.moves_left_channels, f, 1), fc1, fc2)
    fmt = NetworkFormat(
        input=InputFormat(c.input_format),
        output=OutputFormat.WDL if c.wdl else OutputFormat.CLASSICAL,
        network=NetworkKind.SE_WITH_HEADFORMAT if c.se else NetworkKind.CLASSICAL_WITH_HEADFORMAT,
        policy=_POLICY_FORMATS[c.policy],
        value=ValueFormat.WDL if c.wdl else ValueFormat.CLASSICAL,
        moves_left=MovesLeftFormat.V1 if c.moves_left else MovesLeftFormat.NONE,
        default_activation=DefaultActivation.MISH if act == Activation.MISH else DefaultActivation.RELU,
        smolgen_activation=Activation.DEFAULT,
        ffn_activation=Activation.DEFAULT,
        input_embedding=InputEmbedding.NONE,
    )
    return ResidualNetwork(
        format=fmt, input=inp, blocks=blocks, policy=policy, value=value, moves_left=moves_left,
        default_act=act,
        license=f"lc0py random network: preset {name}, seed {seed} (not a trained network)",
        extra={"policy_heads": {"vanilla": policy}, "value_heads": {"winner": value}},
    )


__all__ = ["RESIDUAL_POLICIES", "ResidualPreset", "random_residual_network"]
