"""Host-side preparation of a residual (SE-ResNet) network for the GPU: shape, weight records, buffers.

Pure numpy, no device (tested without a GPU). Activations are NHWC rows ``[B*64, C]`` (row
``b*64 + s``, ``s = rank*8 + file``), so ``pack_residual_model`` re-arranges lc0's layouts once:

* 3x3 convolutions ``[Cout, Cin, 3, 3]`` -> ``[Cout, 3, 3, Cin]`` = ``[Cout, 9 Cin]``: column
  ``t*Cin + c`` with ``t = dr*3 + df``, the order the ``im2col3x3`` kernel writes its columns in,
  so a convolution is one GEMM ``cols · Wᵀ``; 1x1 convolutions are ``[Cout, Cin]`` dense weights.
* Dense layers after a convolution (value/moves-left fc1, classical policy fc) read lc0's
  channel-major flattening ``c*64 + s``; the NHWC map flattens square-major ``s*Cc + c``, so their
  input columns are permuted at upload.
* Convolution policy: the 73x64 -> 1858 map becomes an int32 table of NHWC offsets
  ``square*P + plane`` and the second convolution's bias a per-output ``[1858]`` bias, both read
  by the ``gather_bias`` kernel (the bias is added while gathering, not over all ``64·P``).
* Classical policy: identity gather + the dense bias, same kernel (it also converts to fp32).
* The value / moves-left heads reuse the attention body's ``FcHeadWeights`` (a 1x1 convolution is
  the per-square "embedding" dense).
* Attention policy on a residual body: the attention body's ``AttentionPolicyWeights`` (SELU
  embedding); policy encoder layers are refused.
* ``winograd=True``: every 3x3 convolution's weights are the Winograd F(4x4,3x3) filter transform
  ``U = G g Gᵀ`` as ``[36, Cout, Cin]`` (float64 on the host), for 36 batched GEMMs between the
  ``winograd_input`` and ``winograd_output`` kernels instead of im2col + one GEMM.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic

import numpy as np

from lc0py.backends.gpu.fp8_quant import FP8_PARTIALS
from lc0py.backends.gpu.se_fold import STATS, fold_se_fc1
from lc0py.backends.gpu.weights import (
    PLANES,
    POLICY_OUT,
    SEQ,
    A,
    AttentionPolicyWeights,
    FcHeadWeights,
    attention_policy_weights,
    bias_of,
    cast_arrays,
)
from lc0py.errors import UnsupportedNetError
from lc0py.model.tables import conv_policy_gather
from lc0py.weights.network import Dense
from lc0py.weights.residual import (
    ClassicalPolicyHead,
    Conv,
    ConvPolicyHead,
    ResidualAttentionPolicyHead,
    ResidualNetwork,
)


@dataclass(frozen=True)
class ResidualShape:
    """Sizes of a residual net's GPU forward pass. ``E`` (= C), ``Pe``, ``Pd``, ``Vc``... keep the
    attention ``NetShape``'s names where a shared layer (attention policy, value heads) reads them."""

    C: int
    blocks: int
    S: int  # largest SE hidden size (0: no SE unit)
    policy: str  # "convolution" | "classical" | "attention"
    P: int  # policy convolution channels (convolution: P >= 73; classical: the 1x1 outputs)
    Pe: int
    Pd: int
    Vc: int
    Vh: int
    v_out: int
    mlh: bool
    Mc: int
    Mh: int
    winograd: bool = False  # 3x3 convolutions as Winograd F(4x4,3x3) instead of im2col
    fp8: bool = False  # the tower's convolutions in FP8 (fp8_residual.py): its buffers are planned too

    @property
    def E(self) -> int:
        return self.C

    @property
    def seq(self) -> int:
        return SEQ


def residual_shape(net: ResidualNetwork, winograd: bool = False) -> ResidualShape:
    """Sizes of ``net``; raises ``UnsupportedNetError`` for what the GPU path does not run."""
    pol = net.policy
    p = pe = pd = 0
    if isinstance(pol, ConvPolicyHead):
        kind, p = "convolution", pol.conv2.n_out
    elif isinstance(pol, ClassicalPolicyHead):
        kind, p = "classical", pol.conv.n_out
    else:
        assert isinstance(pol, ResidualAttentionPolicyHead)
        if pol.encoders:
            raise UnsupportedNetError(
                "GPU backend: attention policy encoder layers on a residual body are not supported "
                "yet; use --backend numpy or onnx-cpu"
            )
        kind, pe, pd = "attention", pol.head.embedding.n_out, pol.head.wq.n_out
    ml = net.moves_left
    return ResidualShape(
        C=net.filters,
        blocks=net.num_blocks,
        S=max((b.se.fc1.n_out for b in net.blocks if b.se is not None), default=0),
        policy=kind,
        P=p,
        Pe=pe,
        Pd=pd,
        Vc=net.value.conv.n_out,
        Vh=net.value.fc1.n_out,
        v_out=net.value.fc2.n_out,
        mlh=ml is not None,
        Mc=ml.conv.n_out if ml else 0,
        Mh=ml.fc1.n_out if ml else 0,
        winograd=winograd,
    )


# ---- typed weight records (host arrays, or device pointers after map_arrays) ---------------------
@dataclass
class ConvWeights(Generic[A]):
    """A convolution as a GEMM: ``w [Cout, k*k*Cin]`` (tap-major im2col columns), ``b [Cout]``."""

    w: A
    b: A


@dataclass
class SeWeights(Generic[A]):
    """Squeeze-and-excitation: ``fc1 [S, C]`` (+ default activation), ``fc2`` transposed to ``[S, 2C]``
    (outputs: scale | bias; transposed so the kernels' threads, one per output, read consecutive
    addresses). fc1 is None where every batch makes the gates outside the step (``se_gates=on``
    on a fused body), the folded fc1 None where none does: no upload is dead weight."""

    fc1_w: A | None
    fc1_b: A | None
    fc2_w: A
    fc2_b: A
    #: fc1 folded with the block's second convolution onto the first one's per-tile sums,
    #: ``[S, 16C]`` and ``[S]`` (backend option ``se_gates``; lc0py/backends/gpu/se_fold.py)
    fold_w: A | None = None
    fold_b: A | None = None


@dataclass
class ResidualBlockWeights(Generic[A]):
    conv1: ConvWeights[A]
    conv2: ConvWeights[A]  # its bias is added inside the se_residual kernel
    se: SeWeights[A] | None


@dataclass
class ConvPolicyWeights(Generic[A]):
    conv1: ConvWeights[A]  # 3x3 C -> C (+ act)
    conv2_w: A  # [P, 9C]
    out_bias: A  # [1858]: the second convolution's bias of each output's plane
    gather: A  # int32 [1858]: NHWC offsets square*P + plane


@dataclass
class ClassicalPolicyWeights(Generic[A]):
    conv: ConvWeights[A]  # 1x1 C -> P (+ act)
    fc_w: A  # [1858, 64P], input columns square-major
    fc_b: A  # [1858], added by gather_bias
    gather: A  # int32 identity [1858]


ResidualPolicyWeights = ConvPolicyWeights[A] | ClassicalPolicyWeights[A] | AttentionPolicyWeights[A]


@dataclass
class ResidualModelWeights(Generic[A]):
    input: ConvWeights[A]  # 3x3 112 -> C
    blocks: list[ResidualBlockWeights[A]]
    policy: ResidualPolicyWeights[A]
    value: FcHeadWeights[A]
    moves_left: FcHeadWeights[A] | None


def conv_matrix(conv: Conv) -> np.ndarray:
    """``[Cout, Cin, k, k]`` -> ``[Cout, k*k*Cin]`` with column ``(dr*k + df)*Cin + c``."""
    w = np.asarray(conv.w)
    return w.transpose(0, 2, 3, 1).reshape(w.shape[0], -1)


#: Winograd F(4x4, 3x3) filter transform (Lavin & Gray): U = G g Gᵀ, 6x6 per (out, in) pair.
WINOGRAD_G = np.array(
    [[1 / 4, 0, 0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6], [1 / 24, 1 / 12, 1 / 6],
     [1 / 24, -1 / 12, 1 / 6], [0, 0, 1]]
)


def winograd_filter(conv: Conv) -> np.ndarray:
    """``[Cout, Cin, 3, 3]`` -> ``U [36, Cout, Cin]`` (``k = 6*row + col`` of ``G g Gᵀ``), float64."""
    g = np.asarray(conv.w, np.float64)
    u = np.einsum("ia,ocab,jb->ijoc", WINOGRAD_G, g, WINOGRAD_G)
    return u.reshape(36, g.shape[0], g.shape[1])


def square_major(w: np.ndarray, channels: int) -> np.ndarray:
    """A dense weight reading ``c*64 + s`` -> the same weight reading ``s*channels + c``."""
    n_out = w.shape[0]
    return w.reshape(n_out, channels, SEQ).transpose(0, 2, 1).reshape(n_out, SEQ * channels)


def _conv(conv: Conv, winograd: bool = False) -> ConvWeights[np.ndarray]:
    w = winograd_filter(conv) if winograd and conv.kernel == 3 else conv_matrix(conv)
    return ConvWeights(w, np.asarray(conv.b))


def _conv_head(conv: Conv, fc1: Dense, fc2: Dense) -> FcHeadWeights[np.ndarray]:
    """A 1x1 convolution + two dense layers as the attention body's per-square FC head."""
    return FcHeadWeights(
        conv_matrix(conv),
        np.asarray(conv.b),
        square_major(fc1.w, conv.n_out),
        bias_of(fc1),
        fc2.w,
        bias_of(fc2),
    )


def conv_policy_tables(planes: int, bias: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(gather int32 [1858], out_bias [1858])`` of the convolution policy on an NHWC ``[64, P]`` map."""
    g = conv_policy_gather()  # plane*64 + square
    plane, square = g // SEQ, g % SEQ
    return (square * planes + plane).astype(np.int32), np.asarray(bias)[plane]


def pack_residual_model(
    net: ResidualNetwork, dtype: type, winograd: bool = False, fold_se: bool = False, plain_se: bool = True
) -> ResidualModelWeights[np.ndarray]:
    """Every device array of ``net`` re-arranged for NHWC, contiguous, in ``dtype`` (tables: int32);
    3x3 convolutions as im2col matrices, or Winograd filter transforms with ``winograd``. Each
    SE's fc1 as it is with ``plain_se``, folded with its block's second convolution with
    ``fold_se`` (the gates outside the step, se_fold.py)."""
    s = residual_shape(net, winograd)
    blocks = []
    for block in net.blocks:
        se = None
        if block.se is not None:
            f1, f2 = block.se.fc1, block.se.fc2
            se = SeWeights(f1.w if plain_se else None, bias_of(f1) if plain_se else None, f2.w.T, bias_of(f2))
            if fold_se:
                se.fold_w, se.fold_b = fold_se_fc1(block.conv2, f1)
        blocks.append(ResidualBlockWeights(_conv(block.conv1, winograd), _conv(block.conv2, winograd), se))
    pol = net.policy
    policy: ResidualPolicyWeights[np.ndarray]
    if isinstance(pol, ConvPolicyHead):
        gather, out_bias = conv_policy_tables(s.P, pol.conv2.b)
        conv2 = winograd_filter(pol.conv2) if winograd else conv_matrix(pol.conv2)
        policy = ConvPolicyWeights(_conv(pol.conv1, winograd), conv2, out_bias, gather)
    elif isinstance(pol, ClassicalPolicyHead):
        policy = ClassicalPolicyWeights(
            _conv(pol.conv),
            square_major(pol.fc.w, s.P),
            bias_of(pol.fc),
            np.arange(POLICY_OUT, dtype=np.int32),
        )
    else:
        assert isinstance(pol, ResidualAttentionPolicyHead)
        policy = attention_policy_weights(pol.head)
    v, m = net.value, net.moves_left
    model = ResidualModelWeights(
        input=_conv(net.input, winograd),
        blocks=blocks,
        policy=policy,
        value=_conv_head(v.conv, v.fc1, v.fc2),
        moves_left=_conv_head(m.conv, m.fc1, m.fc2) if m is not None else None,
    )
    return cast_arrays(model, dtype)


def plan_residual_buffers(s: ResidualShape, batch: int, elem: int) -> dict[str, int]:
    """Bytes of every activation buffer for ``batch`` positions, by ``Buffers`` field name."""
    m = batch * SEQ
    sizes: dict[str, int] = {
        "in_masks": batch * PLANES * 8,
        "in_values": batch * PLANES * 4,
        "tokens": m * PLANES * elem,
        "x": m * s.C * elem,  # the residual stream
        "x1": m * s.C * elem,  # first convolution of a block; convolution policy's first conv
    }
    if s.winograd:  # transformed inputs [B*4, 36, Cin] and GEMM outputs [36, B*4, Cout]
        sizes["wino_v"] = 36 * batch * 4 * max(s.C, PLANES) * elem
        sizes["wino_m"] = 36 * batch * 4 * max(s.C, s.P) * elem
        if s.S:  # the SE outside the fused step (backend option se_gates; se_fold.py)
            sizes |= {"se_stats": batch * STATS * s.C * elem, "se_hpre": batch * s.S * elem,
                      "se_gates": batch * 2 * s.C * elem}
    else:
        sizes["cols"] = m * 9 * max(s.C, PLANES) * elem  # im2col of the 3x3 convolutions
    sizes |= {
        "conv": m * max(s.C, s.P) * elem,  # second convolution of a block; policy convolution out
        "out_policy": batch * POLICY_OUT * 4,
        "val_v1": m * s.Vc * elem,
        "val_v2": batch * s.Vh * elem,
        "out_value": batch * s.v_out * elem,
    }
    if s.mlh:  # right after out_value: one copy brings both heads to the host (GpuRunner._finish)
        sizes["out_mlh"] = batch * elem
    if s.policy == "classical":
        sizes["pol_fc"] = batch * POLICY_OUT * elem
    if s.policy == "attention":
        sizes["ffn"] = m * s.Pe * elem
        sizes["pol_qk"] = m * 2 * s.Pd * elem
        sizes["pol_lg"] = batch * SEQ * SEQ * elem
    if s.mlh:
        sizes["mlh_m1"] = m * s.Mc * elem
        sizes["mlh_m2"] = batch * s.Mh * elem
    if s.fp8:  # the quantized convolution input (e4m3: V, or x whose im2col goes to cols), maxima, scale
        c = max(s.C, PLANES)
        sizes["fp8_x"] = 36 * 4 * batch * c if s.winograd else m * c
        sizes["fp8_partial"] = FP8_PARTIALS * 4
        sizes["fp8_scale"] = 4
    return sizes
