"""Classical residual (convolutional, optionally squeeze-and-excitation) lc0 networks.

The T40-T80 era nets, Maia and the small "gyal" nets: an input 3x3 convolution, a tower of
residual blocks (two 3x3 convolutions, an optional SE unit, a skip connection), then a
convolution, classical (dense) or attention policy head, a value head and an optional
moves-left head. ``docs/residual-body.md`` describes the computation with lc0 source references.

This module holds the typed description, ``ResidualNetwork`` (body kind ``"residual"``, behind
``BaseNetwork``'s interface); ``residual_reader.py`` builds it from a file, folding batch norm into
the convolutions as lc0 does, and ``residual_writer.py`` / ``residual_random.py`` write and
generate it.

Array layouts are lc0's: convolution weights ``[out, in, k, k]`` (k = 3 or 1), dense ``[out, in]``;
a dense layer after a convolution reads the ``[channels, 64]`` map flattened channel-major
(index ``c*64 + square``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from lc0py.weights.network import (
    Activation,
    BaseNetwork,
    BodyKind,
    Dense,
    EncoderLayer,
    NetworkKind,
    PolicyHead,
    WeightedLayer,
)

#: Planes of lc0's convolution policy map (``kPolicyUsedPlanes``): 56 queen-line + 8 knight + 9
#: under-promotion planes of 64 squares each.
CONV_POLICY_PLANES = 73
#: Output channels lc0's ONNX converter assumes for the second policy convolution.
CONV_POLICY_CHANNELS = 80
#: Policy-encoder layers on a residual body use LayerNorm epsilon 1e-6 and no DeepNorm scaling.
POLICY_ENCODER_EPS = 1e-6
#: The network formats of residual bodies (the loader's ``body_of``).
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

    body: ClassVar[BodyKind] = "residual"
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

    def summary(self) -> str:
        return f"residual {self.num_blocks}x{self.filters}"

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


__all__ = [
    "CONV_POLICY_CHANNELS", "CONV_POLICY_PLANES", "POLICY_ENCODER_EPS", "RESIDUAL_KINDS",
    "ClassicalPolicyHead", "Conv", "ConvMovesLeftHead", "ConvPolicyHead", "ConvValueHead",
    "ResidualAttentionPolicyHead", "ResidualBlock", "ResidualNetwork", "ResidualPolicy", "SEUnit",
]
