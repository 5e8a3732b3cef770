"""The FP8 path of the GPU backend (``cuda-fp8``, ``precision=fp8``): the big GEMMs of an
attention body in e4m3 through cuBLASLt, everything else as in ``cuda-fp16``.

Per encoder layer, the four GEMMs that hold most of the FLOPs -- QKV (+ smolgen compress), the
output projection, FFN1, FFN2 -- and the smolgen generator (the ``[B·H, gs] x [gs, 4096]`` GEMM
shared by every layer) run in e4m3. By default (``fp8_scales=outer``, ``fp8_fuse=on``)::

    LayerNorm -> x (fp16) + e4m3(x), row scales   the kernel that writes a row quantizes it
    cuBLASLt FP8 GEMM -> D (fp16)                 row scales x per-channel weight scales inside
                                                  (outer-vector scaling), residual added (beta = 1)
    FFN1: fp8_bias_act_rows(D) -> e4m3(hidden)    bias + activation + per-row quantize, one pass

so the only separate quantize pass left is the attention output's (and layer 0's input). With
``fp8_fuse=off`` the same codes come from separate ``fp8_quantize_rows`` passes. With
``fp8_scales=channel``::

    fp8_amax + fp8_quantize(x)      per-tensor scale of the running batch, on the device
    cuBLASLt FP8 GEMM -> D (fp16)   alpha = the weight's per-tensor part, B scale = x's scale
    fp8_epilogue(D)                 per-channel weight scale, bias, activation, residual

(kernels/fp8.hip; the weights' scales: fp8_quant.py). With ``fp8_scales=tensor`` each weight has
one scale: QKV needs no epilogue pass, and the output projection and FFN2 add their residual in
cuBLASLt (beta = 1). The FFN's hidden layer gets its per-block maxima from the FFN1 epilogue
itself, so it needs no separate amax pass. The smolgen generator's weight has one scale for the
whole matrix in every mode, and its input one per tensor: its output (``[B, H, 64, 64]``, the
largest tensor of the pass) then needs no epilogue pass at all. docs/fp8.md counts the bytes.
LayerNorm, softmax/attention, the embedding and the heads stay fp16 with fp32 arithmetic. No
calibration file, no host sync: every scale is computed on the device, so the pass is captured
in a CUDA graph like the fp16 one.

FP8 needs NVIDIA compute capability 8.9+ (Ada, Hopper, Blackwell) and cuBLASLt; elsewhere
``fp8_refusal`` gives the one-line reason the backend refuses with. AMD: kernels/fp8.hip compiles
for gfx942's FP8 (fnuz) types in CI, but no AMD FP8 GEMM is wired and nothing has run there.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np

from lc0py.backends.gpu.fp8_quant import FP8_PARTIALS, Fp8Weight, quantize_per_channel, quantize_per_tensor
from lc0py.backends.gpu.layers import ACT_NONE, EncoderLayer, GpuModel, Smolgen, Tap
from lc0py.backends.gpu.ops import THREADS, F, GpuOps, I, P, ln_config
from lc0py.backends.gpu.weights import SEQ, Buffers, ModelWeights, NetShape, upload_record
from lc0py.gpu.compile_cache import KernelCache
from lc0py.gpu.cublaslt import FP8_ALIGN
from lc0py.gpu.platform import DeviceInfo, KernelArg, Platform
from lc0py.weights.network import Network

_log = logging.getLogger(__name__)
FP8_MIN_CC = 89  # e4m3 tensor cores: Ada (8.9), Hopper (9.0) and newer
U = __import__("ctypes").c_uint
A = TypeVar("A", np.ndarray, int)


def fp8_refusal(info: DeviceInfo) -> str:
    """Why FP8 cannot run on this device ('' when it can): the one line the backend refuses with."""
    if info.vendor != "nvidia":
        return (
            f"FP8 runs on NVIDIA GPUs of compute capability 8.9+ only; {info.name} ({info.arch}) is "
            f"{info.vendor} (the FP8 kernels compile for gfx942 in CI but have never run on AMD)"
        )
    if info.arch_number < FP8_MIN_CC:
        cc = info.arch_number
        return (
            f"FP8 needs an NVIDIA GPU of compute capability 8.9 or newer (Ada, Hopper, Blackwell); "
            f"{info.name} is {cc // 10}.{cc % 10} ({info.arch}): use cuda-fp16"
        )
    return ""


def effective_fp8_scales(requested: str, gemms: Any) -> str:
    """``fp8_scales`` as it will run: ``outer`` needs cuBLASLt's outer-vector scaling (cuBLAS 12.9+,
    the provider's ``supports_outer``; a provider without the attribute is taken to have it);
    without it the per-channel path runs instead, with one warning line."""
    if requested == "outer" and not getattr(gemms, "supports_outer", True):
        version = getattr(gemms, "version", "?")
        _log.warning("fp8_scales=outer needs cuBLASLt 12.9+ (outer-vector scaling), this one is %s: "
                     "running fp8_scales=channel", version)
        return "channel"
    return requested


def fp8_shape_refusal(s: NetShape) -> str:
    """Why this net's GEMMs cannot run in FP8 ('' when they can): cuBLASLt wants K and N of every
    FP8 GEMM to be multiples of 16."""
    dims = {"embedding size": s.E, "attention width": s.D, "FFN width": s.Fd, "QKV width": s.qkv_ld}
    if s.smolgen:
        dims["smolgen gen size"] = s.gs
    bad = [f"{k} {v}" for k, v in dims.items() if v % 16]
    return f"FP8 GEMMs need multiples of 16: {', '.join(bad)}" if bad else ""


# ---- weights ---------------------------------------------------------------------------------
@dataclass
class Fp8LayerWeights(Generic[A]):
    """One encoder layer's FP8 weights: e4m3 codes ``[N, K]`` and per-channel factors ``[N]``
    (``None`` with per-tensor scales, where no epilogue reads them; FFN1's epilogue always runs
    for its bias and activation: ones there)."""

    qkv_q: A | None  # None: this GEMM runs in fp16 (``fp8_gemms``)
    qkv_cs: A | None
    out_q: A | None
    out_cs: A | None
    ffn1_q: A | None
    ffn1_cs: A | None
    ffn2_q: A | None
    ffn2_cs: A | None


@dataclass
class Fp8ModelWeights(Generic[A]):
    layers: list[Fp8LayerWeights[A]]
    smolgen_q: A | None  # the generator [4096, gs], one scale (``Fp8Refs.smolgen``)
    ones: A | None = None  # fp8_scales=outer: FFN1's epilogue factor (the GEMM applied the scales)


@dataclass(frozen=True)
class Fp8Refs:
    """The per-tensor parts of the weight scales: cuBLASLt's alpha of each GEMM (host floats)."""

    qkv: tuple[float, ...]
    out: tuple[float, ...]
    ffn1: tuple[float, ...]
    ffn2: tuple[float, ...]
    smolgen: float


#: The GEMMs that can run in FP8 (``fp8_gemms``); the default is all of them.
FP8_GEMMS = ("qkv", "out", "ffn1", "ffn2", "smolgen")


def pack_fp8(
    packed: ModelWeights[np.ndarray], per_channel: bool = True, outer: bool = False,
    gemms: tuple[str, ...] = FP8_GEMMS, fuse: bool = False,
) -> tuple[Fp8ModelWeights[np.ndarray], Fp8Refs]:
    """Quantize the FP8 GEMMs' weights of a host record (``weights.pack_model``'s, the same matrices
    the fp16 path multiplies by: QKV with its compress and alignment rows, the smolgen generator
    pre-scaled by log2 e); ``per_channel=False``: one scale per matrix (``fp8_scales=tensor``);
    ``outer``: per channel, the factors read by cuBLASLt as its weight scale vectors. A GEMM not in
    ``gemms`` gets ``None`` fields (it runs in fp16; nothing of it is uploaded). ``fuse`` (with
    ``outer``): FFN1's epilogue is ``fp8_bias_act_rows`` where FFN2 is FP8, so no ones vector."""
    quantize = quantize_per_channel if per_channel else quantize_per_tensor
    layers, refs = [], {"qkv": [], "out": [], "ffn1": [], "ffn2": []}  # type: ignore[var-annotated]
    for i, enc in enumerate(packed.encoders):
        mats = {"qkv": enc.qkv_w, "out": enc.out_w, "ffn1": enc.ffn.w1, "ffn2": enc.ffn.w2}
        qw = {k: quantize(w, f"encoder {i} {k}") for k, w in mats.items() if k in gemms}
        for k in mats:
            refs[k].append(qw[k].ref if k in qw else 1.0)

        def q(key: str, qw: dict[str, Fp8Weight] = qw) -> np.ndarray | None:
            return qw[key].q if key in qw else None

        def cs(key: str, qw: dict[str, Fp8Weight] = qw) -> np.ndarray | None:
            # FFN1's factor is read by its epilogue in every mode (ones with per-tensor scales)
            return qw[key].col_scale if key in qw and (per_channel or key == "ffn1") else None

        layers.append(Fp8LayerWeights(
            q("qkv"), cs("qkv"), q("out"), cs("out"), q("ffn1"), cs("ffn1"), q("ffn2"), cs("ffn2"),
        ))
    sg: Fp8Weight | None = None
    if packed.smolgen_w is not None and "smolgen" in gemms:
        sg = quantize_per_tensor(packed.smolgen_w, "smolgen generator")
    ones = None
    if outer and "ffn1" in gemms and not (fuse and "ffn2" in gemms):
        ones = np.ones(max(enc.ffn.w1.shape[0] for enc in packed.encoders), np.float32)
    host = Fp8ModelWeights(layers, sg.q if sg is not None else None, ones)
    return host, Fp8Refs(
        tuple(refs["qkv"]), tuple(refs["out"]), tuple(refs["ffn1"]), tuple(refs["ffn2"]),
        sg.ref if sg is not None else 1.0,
    )


# ---- device primitives -----------------------------------------------------------------------
class Fp8Ops:
    """The FP8 launches on ``GpuOps``' current stream: amax, quantize, GEMM, epilogue."""

    def __init__(self, ops: GpuOps, cache: KernelCache, gemms: Any) -> None:
        self.ops, self.gemms = ops, gemms
        defines = {"LC0_FP16": 1, "LC0_FP8_PARTIALS": FP8_PARTIALS, "LC0_FP8_THREADS": THREADS}
        self.k_amax = cache.function("fp8.hip", "fp8_amax", defines)
        self.k_quant = cache.function("fp8.hip", "fp8_quantize", defines)
        self.k_epi = cache.function("fp8.hip", "fp8_epilogue", defines)
        self.k_rows = cache.function("fp8.hip", "fp8_quantize_rows", defines)
        self.k_bias_act_rows = cache.function("fp8.hip", "fp8_bias_act_rows", defines)
        self.cache = cache
        self.smem = THREADS // ops.p.info.warp_size * 4
        self.rows_per_block = THREADS // ops.p.info.warp_size
        self._ln: dict[tuple[int, int], tuple[int, dict[str, int]]] = {}

    def _launch(self, kernel: int, args: list[KernelArg]) -> None:
        ops = self.ops
        ops.p.launch(kernel, (FP8_PARTIALS, 1, 1), (THREADS, 1, 1), self.smem, ops.stream, args)

    def quantize(self, buf: Buffers, x: int, elems: int, partials_ready: bool = False) -> None:
        """``buf.fp8_x = e4m3(x)`` and ``buf.fp8_scale`` (``elems`` fp16 values, a multiple of 8);
        ``partials_ready``: the kernel that wrote ``x`` left its per-block maxima already."""
        assert elems % 8 == 0, elems
        chunks = U(elems // 8)
        if not partials_ready:
            self._launch(self.k_amax, [P(x), chunks, P(buf.fp8_partial)])
        self._launch(self.k_quant, [P(x), chunks, P(buf.fp8_partial), P(buf.fp8_x), P(buf.fp8_scale)])

    def quantize_rows(self, buf: Buffers, x: int, rows: int, n: int) -> None:
        """``buf.fp8_x = e4m3(x)`` per row, the rows' scales in ``buf.fp8_row_scale``."""
        assert n % 8 == 0, n
        grid = (-(-rows // self.rows_per_block), 1, 1)
        args: list[KernelArg] = [P(x), U(rows), U(n), P(buf.fp8_x), P(buf.fp8_row_scale)]
        self.ops.p.launch(self.k_rows, grid, (THREADS, 1, 1), 0, self.ops.stream, args)

    def bias_act_rows(self, buf: Buffers, d: int, rows: int, n: int, bias: int, act: int) -> None:
        """FFN1's epilogue fused with the per-row quantization of its output (outer scales):
        ``buf.fp8_x = e4m3(act(d + bias))`` per row, the scales in ``buf.fp8_row_scale``; the fp16
        hidden layer is never written (kernels/fp8.hip ``fp8_bias_act_rows``)."""
        assert n % 8 == 0 and bias, (n, bias)
        grid = (-(-rows // self.rows_per_block), 1, 1)
        args: list[KernelArg] = [P(d), U(rows), U(n), P(bias), I(act), P(buf.fp8_x), P(buf.fp8_row_scale)]
        self.ops.p.launch(self.k_bias_act_rows, grid, (THREADS, 1, 1), 0, self.ops.stream, args)

    def prepare_layernorm(self, n: int, act: int) -> None:
        """Compile the LayerNorm that also quantizes its output per row (kernels/layernorm.hip with
        ``LC0_LN_FP8``), at build time: no compile inside a forward pass or a graph capture."""
        if (n, act) not in self._ln:
            cfg = ln_config(n, self.ops.vec, act, self.ops.p.info.warp_size)
            fn = self.ops.function("layernorm.hip", "residual_layernorm_fp8", {**cfg, "LC0_LN_FP8": 1})
            self._ln[(n, act)] = (fn, cfg)

    def layernorm(
        self, buf: Buffers, n: int, y: int, bias: int, out: int, gamma: int, beta: int, rows: int, eps: float,
    ) -> None:
        """``out = LN(y + bias)`` per row of ``n`` as ``GpuOps.layernorm``, and ``buf.fp8_x`` /
        ``buf.fp8_row_scale`` = ``out`` quantized per row, bit for bit what ``quantize_rows(out)``
        writes, without reading ``out`` again."""
        fn, cfg = self._ln[(n, ACT_NONE)]
        per_block = cfg["LC0_LN_ROWS"]
        args: list[KernelArg] = [
            P(y), P(bias), P(0), P(out), P(gamma), P(beta), I(rows), F(1.0), F(eps), I(ACT_NONE),
            P(buf.fp8_x), P(buf.fp8_row_scale),
        ]
        grid = ((rows + per_block - 1) // per_block, 1, 1)
        self.ops.p.launch(fn, grid, (cfg["LC0_LN_THREADS"] * per_block, 1, 1), 0, self.ops.stream, args)

    def gemm(
        self, buf: Buffers, m: int, n: int, k: int, w_q: int, d: int, ref: float, accumulate: bool = False,
        w_scale: int = 0,
    ) -> None:
        """``d[m, n] (fp16) (+)= ref · scale · fp8_x[m, k] @ w_q[n, k]ᵀ`` (``accumulate``: beta = 1);
        ``w_scale``: the weight's per-channel scale vector, and the activation's per-row scales
        (``quantize_rows``) in place of the tensor's (outer-vector scaling)."""
        x_scale = buf.fp8_row_scale if w_scale else buf.fp8_scale
        if w_scale:
            self.gemms.gemm(self.ops.stream, m, n, k, buf.fp8_x, w_q, d, x_scale, ref, accumulate, w_scale)
        else:
            self.gemms.gemm(self.ops.stream, m, n, k, buf.fp8_x, w_q, d, x_scale, ref, accumulate)

    def epilogue(
        self, buf: Buffers, d: int, rows: int, n: int, col_scale: int, out: int, *, bias: int = 0,
        act: int = ACT_NONE, alpha: float = 1.0, beta: float = 0.0, res: int = 0, amax: bool = False,
    ) -> None:
        """``out = alpha · act(d · col_scale + bias) + beta · res`` (kernels/fp8.hip); ``amax``: also
        the per-block maxima of ``out`` for the ``quantize(..., partials_ready=True)`` after it."""
        args: list[KernelArg] = [
            P(d), U(rows), U(n), P(col_scale), P(bias), I(act), F(alpha), F(beta), P(res), P(out),
            P(buf.fp8_partial if amax else 0),
        ]
        self._launch(self.k_epi, args)


# ---- layers ----------------------------------------------------------------------------------
class Fp8Smolgen(Smolgen):
    """``Smolgen`` with the generator GEMM in FP8 (per-tensor weight scale: no epilogue pass)."""

    def __init__(self, base: Smolgen, f8: Fp8Ops, global_q: int, ref: float) -> None:
        self.__dict__.update(base.__dict__)
        self.f8, self.global_q, self.ref = f8, global_q, ref

    def generate(self, ops: GpuOps, buf: Buffers, bsz: int) -> None:
        """``buf.sg_g`` from ``buf.sg_s2`` (``Smolgen.mlp``'s output) in FP8; in fp16 when its
        M = B·H is not a multiple of 16 (batch 1 with 24 heads: FP8 GEMMs want 16-aligned shapes;
        every encoder GEMM has M = 64·B)."""
        s = self.s
        if (bsz * s.H) % FP8_ALIGN:
            super().generate(ops, buf, bsz)
            return
        self.f8.quantize(buf, buf.sg_s2, bsz * s.H * s.gs)
        self.f8.gemm(buf, bsz * s.H, SEQ * SEQ, s.gs, self.global_q, buf.sg_g, self.ref)


class Fp8EncoderLayer(EncoderLayer):
    """``EncoderLayer`` with QKV, the output projection and the FFN in FP8 (module docstring);
    a GEMM whose weight record field is ``None`` (left out by ``fp8_gemms``) runs in fp16 as in
    ``EncoderLayer``. ``mode``: ``fp8_scales`` (channel, tensor, outer).

    ``fuse`` (outer only, ``fp8_fuse=on``): the per-row quantization is done by the kernel that
    produces the activation -- the LayerNorm before FFN1, the one that ends the layer when the next
    layer's QKV is FP8 (``quantize_output``, set by ``build_fp8_model``; the next layer then has
    ``input_quantized``), and FFN1's bias + activation when FFN2 is FP8 -- bit for bit the codes
    and scales of the separate ``fp8_quantize_rows`` passes, with fewer passes over memory."""

    def __init__(
        self, base: EncoderLayer, f8: Fp8Ops, w8: Fp8LayerWeights[int], refs: Fp8Refs, mode: str = "channel",
        ones: int | None = None, fuse: bool = False,
    ) -> None:
        """``ones``: with ``fp8_scales=outer``, a device vector of ones for FFN1's epilogue."""
        self.__dict__.update(base.__dict__)
        i = base.index
        self.f8, self.w8, self.mode, self.ones = f8, w8, mode, ones
        self.fuse = fuse and mode == "outer"
        self.input_quantized = False  # the previous layer's last LayerNorm left fp8_x = e4m3(x)
        self.quantize_output = False  # this layer's last LayerNorm writes e4m3(x) for the next QKV
        self.refs = (refs.qkv[i], refs.out[i], refs.ffn1[i], refs.ffn2[i])
        if self.fuse:
            f8.prepare_layernorm(self.s.E, ACT_NONE)

    def _quantize(self, buf: Buffers, x: int, rows: int, n: int, partials_ready: bool = False) -> None:
        if self.mode == "outer":
            self.f8.quantize_rows(buf, x, rows, n)
        else:
            self.f8.quantize(buf, x, rows * n, partials_ready)

    def _vector(self, cs: int | None) -> int:
        """The weight's scale vector for cuBLASLt (outer mode), else 0."""
        return (cs or 0) if self.mode == "outer" else 0

    def forward(self, ops: GpuOps, buf: Buffers, bsz: int, flash: bool, tap: Tap | None) -> None:
        s, w, w8, f8 = self.s, self.w, self.w8, self.f8
        r_qkv, r_out, r_ffn1, r_ffn2 = self.refs
        m = bsz * SEQ
        if w8.qkv_q is not None:
            if not self.input_quantized:
                self._quantize(buf, buf.x, m, s.E)
            f8.gemm(buf, m, s.qkv_ld, s.E, w8.qkv_q, buf.qkv, r_qkv, w_scale=self._vector(w8.qkv_cs))
            if self.mode == "channel":  # per-channel scales (biases: in attention)
                assert w8.qkv_cs is not None
                f8.epilogue(buf, buf.qkv, m, s.qkv_ld, w8.qkv_cs, buf.qkv)
        else:
            ops.dense(buf.x, m, s.E, w.qkv_w, s.qkv_ld, buf.qkv)
        if self.smolgen is not None:
            self.smolgen.forward(ops, buf, bsz)
        self.attention.forward(buf, w.qkv_b, bsz, flash)
        if tap is not None:
            tap(f"encoder{self.index}.attention", buf.attn, s.D)
        if w8.out_q is not None:
            self._quantize(buf, buf.attn, m, s.D)
            self._residual_gemm(buf, m, s.E, s.D, w8.out_q, w8.out_cs, r_out, self.alpha, buf.x)
        else:
            ops.dense(buf.attn, m, s.D, w.out_w, s.E, buf.x, alpha=self.alpha, beta=1.0)
        # the FFN (Ffn.forward in FP8): x1 += alpha · act(x1 W1ᵀ + b1) W2ᵀ ; x = LN(x1 + alpha b2)
        ffn = self.ffn
        ln1_quantized = self.fuse and w8.ffn1_q is not None
        if ln1_quantized:  # LN1 writes x1 and FFN1's input e4m3(x1)
            f8.layernorm(buf, s.E, buf.x, w.out_b_alpha, buf.x1, w.ln1_g, w.ln1_b, m, self.eps)
        else:
            ops.layernorm(s.E, buf.x, w.out_b_alpha, buf.x1, w.ln1_g, w.ln1_b, m, self.eps, ACT_NONE)
        partials = False  # FFN1's epilogue left the hidden layer's per-block maxima
        hidden_quantized = False  # FFN1's epilogue wrote the hidden layer's codes (fused, outer)
        if w8.ffn1_q is not None:
            if not ln1_quantized:
                self._quantize(buf, buf.x1, m, s.E)
            f8.gemm(buf, m, s.Fd, s.E, w8.ffn1_q, buf.ffn, r_ffn1, w_scale=self._vector(w8.ffn1_cs))
            if self.fuse and w8.ffn2_q is not None:
                f8.bias_act_rows(buf, buf.ffn, m, s.Fd, ffn.w.b1, ffn.act)
                hidden_quantized = True
            else:
                factor = self.ones if self.mode == "outer" else w8.ffn1_cs
                assert factor is not None
                partials = self.mode != "outer" and w8.ffn2_q is not None
                f8.epilogue(buf, buf.ffn, m, s.Fd, factor, buf.ffn, bias=ffn.w.b1, act=ffn.act, amax=partials)
        else:
            ops.dense(buf.x1, m, s.E, ffn.w.w1, s.Fd, buf.ffn)
            ops.bias_act(buf.ffn, ffn.w.b1, m, s.Fd, ffn.act)
        if w8.ffn2_q is not None:
            if not hidden_quantized:
                self._quantize(buf, buf.ffn, m, s.Fd, partials_ready=partials)
            self._residual_gemm(buf, m, s.E, s.Fd, w8.ffn2_q, w8.ffn2_cs, r_ffn2, ffn.alpha, buf.x1)
        else:
            ops.dense(buf.ffn, m, s.Fd, ffn.w.w2, s.E, buf.x1, alpha=ffn.alpha, beta=1.0)
        if self.quantize_output:  # the next layer's QKV input, e4m3(x), with x
            f8.layernorm(buf, s.E, buf.x1, ffn.w.b2_alpha, buf.x, ffn.w.ln_g, ffn.w.ln_b, m, ffn.eps)
        else:
            ops.layernorm(s.E, buf.x1, ffn.w.b2_alpha, buf.x, ffn.w.ln_g, ffn.w.ln_b, m, ffn.eps, ACT_NONE)

    def _residual_gemm(
        self, buf: Buffers, m: int, n: int, k: int, w_q: int, cs: int | None, ref: float, alpha: float, x: int
    ) -> None:
        """``x += alpha · fp8_x · Wᵀ``: per-channel scales through ``fp8_d`` and the epilogue; one
        scale per matrix, or outer-vector scales, inside cuBLASLt (beta = 1, C = D = x)."""
        if self.mode == "channel":
            assert cs is not None
            self.f8.gemm(buf, m, n, k, w_q, buf.fp8_d, ref)
            self.f8.epilogue(buf, buf.fp8_d, m, n, cs, x, alpha=alpha, beta=1.0, res=x)
        else:
            self.f8.gemm(buf, m, n, k, w_q, x, ref * alpha, accumulate=True, w_scale=self._vector(cs))


def link_quantized_outputs(layers: list[EncoderLayer]) -> None:
    """Where a fused FP8 layer is followed by an FP8 layer whose QKV runs in FP8 with per-row
    scales, the first layer's last LayerNorm writes the codes the second one's QKV reads
    (``quantize_output`` / ``input_quantized``); the first layer's input still needs its own pass
    (the embedding writes it), as does any layer after an fp16 QKV."""
    for prev, nxt in zip(layers, layers[1:], strict=False):
        if (isinstance(prev, Fp8EncoderLayer) and isinstance(nxt, Fp8EncoderLayer) and prev.fuse and nxt.fuse
                and nxt.w8.qkv_q is not None):
            prev.quantize_output = nxt.input_quantized = True


class Fp8Resources:
    """What the FP8 path owns on the device: cuBLASLt (handle, workspace, plans) and the FP8
    weights' allocation. ``close`` frees them (the network's ``close`` calls it)."""

    def __init__(self, platform: Platform, gemms: Any) -> None:
        self.p, self.gemms, self.base = platform, gemms, 0
        self.weights: Fp8ModelWeights[int] | None = None  # the device record, once uploaded

    def upload(self, host: Fp8ModelWeights[np.ndarray], stream: int) -> Fp8ModelWeights[int]:
        record, self.base, self.nbytes = upload_record(self.p, host, stream)
        return record  # type: ignore[no-any-return]

    def close(self) -> None:
        if self.base:
            self.p.free(self.base)
            self.base = 0
        if self.gemms is not None:
            self.gemms.close()
            self.gemms = None


def build_fp8_model(
    model: GpuModel, ops: GpuOps, cache: KernelCache, net: Network, packed: ModelWeights[np.ndarray],
    gemms: Any, per_channel: bool = True, outer: bool = False, fp8_gemms: tuple[str, ...] = FP8_GEMMS,
    fuse: bool = True,
) -> Fp8Resources:
    """Turn the fp16 ``model`` (built on ``packed``'s upload) into the FP8 one in place: quantize
    and upload the FP8 weights, swap the encoder layers (and smolgen) for their FP8 forms.
    ``gemms``: the FP8 GEMM provider (``lc0py.gpu.cublaslt.CublasLtFp8`` on a device; tests pass
    a fake). ``fuse``: with ``outer``, the per-row quantization inside the LayerNorm and FFN1
    epilogue kernels (``fp8_fuse``). Returns what must be closed with the network."""
    res = Fp8Resources(ops.p, gemms)
    try:
        host, refs = pack_fp8(packed, per_channel or outer, outer, fp8_gemms, fuse)
        dev = res.upload(host, ops.main)
        res.weights = dev
        f8 = Fp8Ops(ops, cache, gemms)
        layers: list[EncoderLayer] = []
        for layer, w8 in zip(model.encoders, dev.layers, strict=True):
            if layer.smolgen is not None and dev.smolgen_q is not None:
                layer.smolgen = Fp8Smolgen(layer.smolgen, f8, dev.smolgen_q, refs.smolgen)
            mode = "outer" if outer else "channel" if per_channel else "tensor"
            layers.append(Fp8EncoderLayer(layer, f8, w8, refs, mode, dev.ones, fuse))
        link_quantized_outputs(layers)
        model.encoders = layers
    except BaseException:
        res.close()
        raise
    return res
