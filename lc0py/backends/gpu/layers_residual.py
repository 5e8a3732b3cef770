"""The GPU forward pass of a classical residual (SE-ResNet) net, as layer objects.

Activations are NHWC rows ``[B*64, C]`` (docs/gpu-design.md), so every layer is GEMMs plus a few
small kernels (kernels/residual.hip, policy_map.hip)::

    tokens = expand(planes)                          [B*64, 112], already NHWC
    x      = act(im2col(tokens)·Winᵀ + b)            input 3x3 conv: im2col kernel, GEMM, bias/act
    per block:
      h    = act(im2col(x)·W1ᵀ + b1)                 im2col, GEMM, bias/act
      y    = im2col(h)·W2ᵀ                           im2col, GEMM
      x    = act(SE(y + b2) + x)                     one kernel per position (pool, fc1, fc2,
                                                     sigmoid scale + bias, skip, activation)
    policy: convolution (3x3 + act, 3x3, gather 73x64 -> 1858 with the bias),
            classical (1x1 GEMM + act, dense GEMM, gather/bias), or attention (the attention
            body's head, SELU embedding)
    value / moves-left: 1x1 conv GEMM + act, fc1 + act, fc2 (the attention body's ``FcHead``)

With Winograd convolutions on a body whose width ``winograd_output_fused`` takes (``fused``), each
convolution is one batched GEMM between two fused transform steps, as lc0's cuda backend does it::

    V      = Bᵀ d B of the input planes              winograd_input (input conv only)
    M      = 36 GEMMs V · Uᵀ
    x, V   = act(Aᵀ M A + b) and its transform       winograd_output_fused (no skip, no SE)
    per block:
      M    = V · U1ᵀ;  V = transform(act(Aᵀ M A + b1))                (h never reaches memory)
      M    = V · U2ᵀ;  x, V = act(SE(Aᵀ M A + b2) + x) and its transform

The value heads run on the side stream while the policy runs on the main one (as in ``GpuModel``);
they only read ``x``.
"""

from __future__ import annotations

from lc0py.backends.gpu.layers import ACT_NONE, AttentionPolicyHead, MovesLeftHead, Tap, ValueHead
from lc0py.backends.gpu.ops import GpuOps
from lc0py.backends.gpu.residual_kernels import ResidualKernels, fusable
from lc0py.backends.gpu.se_fold import STATS
from lc0py.backends.gpu.weights import (
    PLANES,
    POLICY_OUT,
    SEQ,
    AttentionPolicyWeights,
    Buffers,
    activation_code,
)
from lc0py.backends.gpu.weights_residual import (
    ClassicalPolicyWeights,
    ConvPolicyWeights,
    ConvWeights,
    ResidualBlockWeights,
    ResidualModelWeights,
    ResidualShape,
)
from lc0py.weights.network import Activation
from lc0py.weights.residual import ResidualNetwork

#: the side-stream branch (``GpuOps.branch``) of a block's SE gates (backend option ``se_gates``)
SE_BRANCH = 1
#: lc0 hard-codes SELU for the attention-policy embedding on a non-attention body.
RESIDUAL_ATTENTION_POLICY_ACT = Activation.SELU


class Conv3x3:
    """``out = act(conv3x3(x) + b)`` (``act`` None: no bias, no activation -- left to the caller).

    im2col: ``im2col3x3`` kernel, one GEMM ``[B*64, 9Cin] x [Cout, 9Cin]ᵀ``, bias/act kernel.
    Winograd F(4x4,3x3): ``winograd_input`` -> ``V [B*4, 36, Cin]`` (tile-major), 36 batched GEMMs
    with ``U [36, Cout, Cin]`` -> ``M [36, B*4, Cout]``, ``winograd_output`` (inverse transform +
    bias + act).
    """

    def __init__(
        self, w: ConvWeights[int], c_in: int, c_out: int, act: int | None, winograd: bool,
        kernels: ResidualKernels | None = None,
    ) -> None:
        """``kernels``: the network's kernel choices (which fused step a batch takes); needed by
        ``forward_fused`` / ``output_fused`` only."""
        self.w, self.c_in, self.c_out, self.act, self.winograd = w, c_in, c_out, act, winograd
        self.kernels = kernels

    def multiply(self, ops: GpuOps, buf: Buffers, bsz: int, sms: int = 0) -> None:
        """Winograd: the 36 batched GEMMs ``M[:, k] = V[:, k] · U[k]ᵀ`` (``V`` already transformed).
        ``V`` tile-major: element k's rows are every 36th row (leading dimension 36C, batch
        stride C); ``M`` element-major (kernels/residual.hip says why). ``sms``: see
        ``Platform.gemm``."""
        cin, cout, tiles = self.c_in, self.c_out, bsz * 4
        ops.gemm(tiles, cout, cin, buf.wino_v, 36 * cin, self.w.w, cin, buf.wino_m, cout, trans_b=True,
                 batch=36, stride_a=cin, stride_b=cout * cin, stride_c=tiles * cout, sms=sms)

    def forward_fused(
        self, ops: GpuOps, buf: Buffers, bsz: int, *, out: int = 0, transform_next: bool = True,
        skip: int = 0, se: tuple[int, int, int, int] | None = None, se_hidden: int = 0,
        act: int | None = None, stats: int = 0, gates: int = 0,
    ) -> None:
        """Winograd with the fused output step (``winograd_output_fused``): ``buf.wino_v`` (already
        transformed) -> the GEMMs -> ``y = act(SE(conv + b) + skip)``, stored to NHWC ``out``
        (0: not stored) and, with ``transform_next``, transformed back into ``buf.wino_v`` for the
        next convolution. ``act``: this layer's unless given (a block's second convolution takes
        the block's, applied after the skip). ``stats``: also write the per-tile sums of ``y``
        there; ``gates``: apply these SE gates instead of ``se`` (backend option ``se_gates``)."""
        self.multiply(ops, buf, bsz)
        self.output_fused(ops, buf, bsz, out=out, transform_next=transform_next, skip=skip, se=se,
                          se_hidden=se_hidden, act=act, stats=stats, gates=gates)

    def output_fused(
        self, ops: GpuOps, buf: Buffers, bsz: int, *, out: int = 0, transform_next: bool = True,
        skip: int = 0, se: tuple[int, int, int, int] | None = None, se_hidden: int = 0,
        act: int | None = None, stats: int = 0, gates: int = 0,
    ) -> None:
        """``forward_fused`` after the GEMMs: the fused step alone (``buf.wino_m`` already holds
        ``M``)."""
        v_next = buf.wino_v if transform_next else 0
        act_code = self.act if act is None else act
        assert act_code is not None
        assert self.kernels is not None, "a fused convolution is built with the network's kernel choices"
        kernel = self.kernels.fused_step(self.c_out, se_hidden, bsz)
        ops.winograd_fused(kernel, buf.wino_m, self.w.b, skip, out, v_next, se, self.c_out, se_hidden,
                           act_code, bsz, stats=stats, gates=gates)

    def forward(
        self, ops: GpuOps, buf: Buffers, x: int, out: int, bsz: int, transformed: bool = False
    ) -> None:
        """``out = conv(x)`` (+ bias, act); ``transformed``: ``buf.wino_v`` already holds ``x``'s
        Winograd input transform (a fused step wrote it)."""
        cin, cout = self.c_in, self.c_out
        if self.winograd:
            if not transformed:
                ops.winograd_input(x, buf.wino_v, bsz, cin)
            self.multiply(ops, buf, bsz)
            bias, act = (self.w.b, self.act) if self.act is not None else (0, ACT_NONE)
            ops.winograd_output(buf.wino_m, bias, out, bsz, cout, act)
            return
        m = bsz * SEQ
        ops.im2col3x3(x, buf.cols, m, cin)
        ops.dense(buf.cols, m, 9 * cin, self.w.w, cout, out)
        if self.act is not None:
            ops.bias_act(out, self.w.b, m, cout, self.act)


class ResidualBlock:
    """Two 3x3 convolutions, then SE (optional) + skip + activation in one kernel.

    ``fused``: ``buf.wino_v`` holds ``x``'s transform on entry, and the block leaves the new
    ``x``'s transform there when ``transform_next`` (the convolution policy reads it)."""

    def __init__(
        self, w: ResidualBlockWeights[int], s: ResidualShape, act: int, index: int, se_hidden: int,
        kernels: ResidualKernels,
    ) -> None:
        self.w, self.s, self.act, self.index, self.se_hidden = w, s, act, index, se_hidden
        self.kernels = kernels
        self.fused = kernels.winograd.fused
        self.conv1 = Conv3x3(w.conv1, s.C, s.C, act, s.winograd, kernels)
        self.conv2 = Conv3x3(w.conv2, s.C, s.C, None, s.winograd, kernels)

    def forward(self, ops: GpuOps, buf: Buffers, bsz: int, transform_next: bool = True) -> None:
        se = self.w.se
        gate = None
        if se is not None and se.fc1_w is not None and se.fc1_b is not None:
            gate = (se.fc1_w, se.fc1_b, se.fc2_w, se.fc2_b)
        c = self.s.C
        if se is not None and self.kernels.se_outside(True, bsz):
            # the SE outside the fused step (se_fold.py): the sums of h -> the folded fc1 GEMM ->
            # se_gates, on the side stream while the main one runs the second convolution's GEMMs
            # (they need only V); the second step waits for both
            fold_w, fold_b = se.fold_w, se.fold_b
            assert fold_w is not None and fold_b is not None, "residual_kernels.se_weights uploads the fold"
            s, k, w2, b2 = self.se_hidden, STATS * c, se.fc2_w, se.fc2_b
            self.conv1.forward_fused(ops, buf, bsz, stats=buf.se_stats)

            def gates() -> None:
                ops.gemm(bsz, s, k, buf.se_stats, k, fold_w, k, buf.se_hpre, s, trans_b=True)
                ops.se_gates_kernel(buf.se_hpre, fold_b, w2, b2, buf.se_gates, c, s, self.act, bsz)

            ops.branch(SE_BRANCH, gates)
            self.conv2.multiply(ops, buf, bsz, sms=self.kernels.branch_sms)
            ops.join(SE_BRANCH)
            self.conv2.output_fused(ops, buf, bsz, out=buf.x, transform_next=transform_next, skip=buf.x,
                                    gates=buf.se_gates, act=self.act)
            return
        if self.fused:
            self.conv1.forward_fused(ops, buf, bsz)
            self.conv2.forward_fused(ops, buf, bsz, out=buf.x, transform_next=transform_next, skip=buf.x,
                                     se=gate, se_hidden=self.se_hidden, act=self.act)
            return
        self.conv1.forward(ops, buf, buf.x, buf.x1, bsz)
        self.conv2.forward(ops, buf, buf.x1, buf.conv, bsz)
        ops.se_residual(buf.conv, self.w.conv2.b, buf.x, buf.x, gate, c, self.se_hidden, self.act, bsz)


class ConvPolicyHead:
    """3x3 conv + act, 3x3 conv to P planes, lc0's 73x64 -> 1858 map (bias added in the gather)."""

    def __init__(
        self, w: ConvPolicyWeights[int], s: ResidualShape, act: int, kernels: ResidualKernels
    ) -> None:
        self.w, self.s, self.fused = w, s, kernels.winograd.fused
        self.conv1 = Conv3x3(w.conv1, s.C, s.C, act, s.winograd, kernels)
        self.conv2 = Conv3x3(ConvWeights(w.conv2_w, 0), s.C, s.P, None, s.winograd)  # bias: in the gather

    def forward(self, ops: GpuOps, buf: Buffers, bsz: int) -> None:
        """``fused``: ``buf.wino_v`` holds ``x``'s transform (the last block wrote it)."""
        w, s = self.w, self.s
        if self.fused:
            self.conv1.forward_fused(ops, buf, bsz)
            self.conv2.forward(ops, buf, 0, buf.conv, bsz, transformed=True)
        else:
            self.conv1.forward(ops, buf, buf.x, buf.x1, bsz)
            self.conv2.forward(ops, buf, buf.x1, buf.conv, bsz)
        ops.gather_bias(buf.conv, SEQ * s.P, w.gather, w.out_bias, buf.out_policy, bsz)


class ClassicalPolicyHead:
    """1x1 conv + act, dense to 1858 (+ bias in the fp32 gather)."""

    def __init__(self, w: ClassicalPolicyWeights[int], s: ResidualShape, act: int) -> None:
        self.w, self.s, self.act = w, s, act

    def forward(self, ops: GpuOps, buf: Buffers, bsz: int) -> None:
        w, s = self.w, self.s
        m = bsz * SEQ
        ops.dense(buf.x, m, s.C, w.conv.w, s.P, buf.conv)
        ops.bias_act(buf.conv, w.conv.b, m, s.P, self.act)
        ops.dense(buf.conv, bsz, SEQ * s.P, w.fc_w, POLICY_OUT, buf.pol_fc)
        ops.gather_bias(buf.pol_fc, POLICY_OUT, w.gather, w.fc_b, buf.out_policy, bsz)


class GpuResidualModel:
    """A residual net as layers, with ``GpuModel``'s ``forward(ops, buf, bsz, flash, tap)``."""

    #: side-stream branches ``forward`` forks: the value/moves-left heads (0) and, with the backend
    #: option ``se_gates``, every block's gates (``SE_BRANCH``, its events re-recorded per block)
    SIDE_BRANCHES = 2
    attention = None  # no attention body: flash does not apply

    def __init__(
        self, ops: GpuOps, net: ResidualNetwork, w: ResidualModelWeights[int], s: ResidualShape,
        kernels: ResidualKernels,
    ) -> None:
        """``kernels``: the network's kernel choices (``residual_kernels``), made from its options."""
        self.s = s
        act = activation_code(net.default_act)
        #: Winograd convolutions through ``winograd_output_fused`` (when it takes this width)
        self.fused = kernels.winograd.fused
        folded = any(bw.se is not None and bw.se.fold_w is not None for bw in w.blocks)
        step_c = s.C if fusable(s.C, ops.p.info.warp_size) else 0
        ops.prepare_residual(step_c, se_outside=self.fused and folded)
        self.input = Conv3x3(w.input, PLANES, s.C, act, s.winograd, kernels)
        self.blocks = [
            ResidualBlock(bw, s, act, i, b.se.fc1.n_out if b.se is not None else 0, kernels)
            for i, (bw, b) in enumerate(zip(w.blocks, net.blocks, strict=True))
        ]
        pol = w.policy
        self.policy: ConvPolicyHead | ClassicalPolicyHead | AttentionPolicyHead
        if isinstance(pol, ConvPolicyWeights):
            self.policy = ConvPolicyHead(pol, s, act, kernels)
        elif isinstance(pol, ClassicalPolicyWeights):
            self.policy = ClassicalPolicyHead(pol, s, act)
        else:
            assert isinstance(pol, AttentionPolicyWeights)
            selu = activation_code(RESIDUAL_ATTENTION_POLICY_ACT)
            self.policy = AttentionPolicyHead(pol, s, selu)  # type: ignore[arg-type]
        self.value = ValueHead(w.value, s.C, s.Vc, s.Vh, s.v_out, act)
        self.moves_left = (
            MovesLeftHead(w.moves_left, s.C, s.Mc, s.Mh, 1, act) if w.moves_left is not None else None
        )

    def forward(self, ops: GpuOps, buf: Buffers, bsz: int, flash: bool, tap: Tap | None = None) -> None:
        ops.expand_planes(buf.in_masks, buf.in_values, buf.tokens, bsz)
        if self.fused:
            ops.winograd_input(buf.tokens, buf.wino_v, bsz, PLANES)
            self.input.forward_fused(ops, buf, bsz, out=buf.x)
        else:
            self.input.forward(ops, buf, buf.tokens, buf.x, bsz)
        if tap is not None:
            tap("input", buf.x, self.s.C)
        conv_policy = isinstance(self.policy, ConvPolicyHead)
        for block in self.blocks:
            block.forward(ops, buf, bsz, transform_next=conv_policy or block is not self.blocks[-1])
            if tap is not None:
                tap(f"block{block.index}.output", buf.x, self.s.C)
        ops.branch(0, lambda: self._value_heads(ops, buf, bsz))
        self.policy.forward(ops, buf, bsz)
        ops.join(0)

    def _value_heads(self, ops: GpuOps, buf: Buffers, bsz: int) -> None:
        self.value.run(ops, buf, bsz)
        if self.moves_left is not None:
            self.moves_left.run(ops, buf, bsz)


__all__ = ["ClassicalPolicyHead", "Conv3x3", "ConvPolicyHead", "GpuResidualModel", "ResidualBlock"]
