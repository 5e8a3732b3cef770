"""The FP8 path of a residual (SE-ResNet) body (``cuda-fp8`` on a residual net): the tower's 3x3
convolutions' GEMMs in e4m3 through cuBLASLt, everything else as in ``cuda-fp16``.

Im2col or Winograd: with ``winograd=auto`` the FP8 path takes im2col whatever the width
(``fp8_winograd_choice``): in FP8 the Winograd F(4x4,3x3) transforms amplify e4m3's error
tenfold (0.36 RMS per convolution against 0.038, ``FP8_WINOGRAD_RMS_ERROR``). ``winograd=on``
runs the Winograd GEMMs in FP8 all the same (below); measured, not recommended.

Which GEMMs: the input convolution and both convolutions of every block (they hold nearly all of
a residual net's FLOPs). The policy head's convolutions, the value / moves-left heads and the SE
layers stay fp16: small, and where the decision is made. A convolution whose GEMM shape FP8 cannot
take (K or N not a multiple of 16: ``conv_fp8_problem``) runs in fp16; ``build_residual_fp8`` logs
which.

Per convolution, on the device::

    im2col (maia-sized bodies, < 128 filters)      Winograd F(4x4,3x3)
    ----------------------------------------      ---------------------------------------------
    fp8_amax + fp8_quantize(x)  (per tensor)      V = input transform (a fused step wrote it)
    colsq = im2col3x3 of the e4m3 bytes           fp8_amax + fp8_quantize(V)   (per tensor)
    D = ref · a · colsq · Wqᵀ (one GEMM)          M[t] = ref · a · Vq[t] · Uq[t]ᵀ, t < 36 (one
                                                  strided-batched cuBLASLt GEMM, cublaslt_batched)
    fp8_epilogue: act(D · cs[n] + b)              fp8_epilogue: M *= cs[n] over all 36 t (per
                                                  channel only), then the existing output step

Weight scales (computed at load, on the fp16 weights the fp16 path multiplies by; for Winograd
after the filter transform ``U = G g Gᵀ``): ``fp8_scales=channel`` (default) one scale per output
channel, shared by the 36 Winograd elements (cuBLASLt takes one alpha for a batched GEMM, and the
output transform is linear per channel, so ``cs[n]`` may scale ``M`` before it);
``fp8_scales=tensor`` one for the whole weight, and then no pass over ``M``: the GEMM's output goes
straight to the output step, unchanged. e4m3 is a floating-point format, so a per-tensor scale
costs precision mainly on weights far below the tensor's largest (into subnormals below 2^-15 of
it); on the real nets it keeps top-1 but doubles mean |dQ| on maia-1500/1900 (docs/fp8.md), so
per channel is the default (``fp8_scales=outer``, the attention bodies' default, runs as
``channel``: an im2col row mixes nine pixels, so per-row activation scales do not apply).

Weight codes: with a calibration of the net in the lc0py cache (``lc0py calibrate``,
fp8_calibration.py) the im2col per-channel path uploads its GPTQ codes (same scales and format,
rounding chosen against the convolutions' real inputs: the weights' own error 2-4x smaller,
top-1 against float32 up 1-3.5 points on the real nets, docs/fp8.md); without one, or with
``fp8_scales=tensor`` / Winograd, round-to-nearest codes (``quantize_conv``).

Activations: per tensor, from the running batch, on the device (kernels/fp8.hip ``fp8_amax`` +
``fp8_quantize``, as the attention path). For im2col the columns are copies of ``x`` and zeros,
so their scale and codes are ``x``'s own: ``x`` is quantized (into ``fp8_x``) and the existing
``im2col3x3`` kernel copies its e4m3 bytes into ``cols`` (16-byte copies, two codes per fp16
slot): the amax and quantize passes read ``x`` instead of columns nine times its size, and the
columns are half the fp16 ones' bytes.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np

from lc0py.backends.gpu.fp8 import Fp8Ops, Fp8Resources
from lc0py.backends.gpu.fp8_quant import Fp8Weight, quantize_per_channel, quantize_per_tensor
from lc0py.backends.gpu.layers import ACT_NONE
from lc0py.backends.gpu.layers_residual import Conv3x3, GpuResidualModel
from lc0py.backends.gpu.ops import GpuOps
from lc0py.backends.gpu.options import FP8_GEMM_NAMES, GpuOptions
from lc0py.backends.gpu.residual_kernels import WinogradChoice, choose_winograd
from lc0py.backends.gpu.weights import PLANES, SEQ, Buffers, upload_record
from lc0py.backends.gpu.weights_residual import ResidualModelWeights, ResidualShape
from lc0py.gpu.compile_cache import KernelCache
from lc0py.gpu.cublaslt import FP8_ALIGN
from lc0py.gpu.cublaslt_batched import BatchedShape
from lc0py.gpu.platform import DeviceInfo

log = logging.getLogger("lc0py.backends.gpu")
A = TypeVar("A", np.ndarray, int)

#: fp8_scales values a residual body takes; ``outer`` (the attention bodies' default: per-row
#: activation scales applied by cuBLASLt) runs as ``channel`` here: an im2col row mixes nine
#: pixels, whose per-row scales would differ (``residual_per_channel``)
RESIDUAL_FP8_SCALES = ("outer", "channel", "tensor")


def residual_per_channel(fp8_scales: str) -> bool:
    """Per-channel weight scales on a residual body: ``channel`` and ``outer`` (the default, which
    runs as ``channel``), not ``tensor``."""
    return fp8_scales != "tensor"
WINOGRAD_ELEMENTS = 36


#: RMS error of one 3x3 convolution (256 filters, random weights, ReLU inputs) in FP8 against
#: float64, numpy emulation (fp8_residual_emulation.py, 2026-11-28): im2col 0.038, Winograd
#: F(4x4,3x3) 0.36 -- the output transform's coefficients (up to 8 per axis) cancel large terms,
#: amplifying e4m3's ~2.6 % error per operand tenfold. So FP8 runs im2col unless asked otherwise.
FP8_WINOGRAD_RMS_ERROR = 0.36


def fp8_winograd_choice(options: GpuOptions, filters: int, device: DeviceInfo) -> WinogradChoice:
    """``choose_winograd`` for the FP8 path: ``winograd=auto`` takes im2col (Winograd's transforms
    amplify FP8's error tenfold, ``FP8_WINOGRAD_RMS_ERROR``); ``winograd=on`` still runs it."""
    if options.winograd is None:
        return WinogradChoice(
            False, False,
            f"winograd=auto with precision=fp8: im2col + one FP8 GEMM (Winograd F(4x4,3x3) in FP8 is "
            f"~{FP8_WINOGRAD_RMS_ERROR:.0%} off per convolution; winograd=on forces it)",
        )
    return choose_winograd(options, filters, device)


def residual_fp8_refusal(fp8_scales: str, fp8_gemms: tuple[str, ...] = FP8_GEMM_NAMES) -> str:
    """Why FP8 cannot run a residual body with these options ('' when it can): one line.
    ``fp8_gemms`` names attention-body GEMMs: on a residual body only its default (all) is
    accepted, so a subset is not silently ignored."""
    if fp8_scales not in RESIDUAL_FP8_SCALES:
        return f"fp8_scales={fp8_scales}: a residual body takes {' or '.join(RESIDUAL_FP8_SCALES)}"
    if set(fp8_gemms) != set(FP8_GEMM_NAMES):
        return (f"fp8_gemms={'+'.join(fp8_gemms)} picks attention-body GEMMs; a residual body runs its "
                f"tower convolutions in FP8 (leave fp8_gemms out)")
    return ""


def winograd_batch_fp8(bsz: int) -> bool:
    """Whether a batch runs its Winograd GEMMs in FP8: their M (``4·bsz`` tiles) a multiple of 16,
    as the attention path asks of every FP8 GEMM (else fp16 for that batch, as its smolgen
    generator at batch 1). The im2col GEMM's M is ``64·bsz``: always."""
    return (4 * bsz) % FP8_ALIGN == 0


def conv_fp8_problem(c_in: int, c_out: int, winograd: bool) -> str:
    """Why this 3x3 convolution's GEMM cannot run in FP8 ('' when it can): K (``c_in``, or ``9·c_in``
    with im2col) and N (``c_out``) multiples of 16; with Winograd also each element's rows of V
    (``c_in``) 16-byte aligned, the same condition."""
    k = c_in if winograd else 9 * c_in
    bad = [f"{name}={v}" for name, v in (("K", k), ("N", c_out)) if v % FP8_ALIGN]
    return f"GEMM {', '.join(bad)} not a multiple of {FP8_ALIGN}" if bad else ""


def quantize_conv(w: np.ndarray, per_channel: bool, what: str = "convolution") -> Fp8Weight:
    """A convolution's packed fp16/float weight in FP8: im2col ``[Cout, 9Cin]``, or Winograd
    ``U [36, Cout, Cin]``. Per channel, a Winograd channel's scale covers its 36 elements; the
    codes keep the packed layout (``q`` of ``U``'s shape)."""
    w = np.asarray(w, np.float64)
    if w.ndim == 3:  # Winograd: output channel n is U[:, n, :]
        t, n, k = w.shape
        rows = w.transpose(1, 0, 2).reshape(n, t * k)
        fw = quantize_per_channel(rows, what) if per_channel else quantize_per_tensor(rows, what)
        q = fw.q.reshape(n, t, k).transpose(1, 0, 2)
        return Fp8Weight(np.ascontiguousarray(q), fw.col_scale, fw.ref)
    return quantize_per_channel(w, what) if per_channel else quantize_per_tensor(w, what)


def dequantized_conv(
    w: np.ndarray, per_channel: bool, calibrated: Fp8Weight | None = None
) -> np.ndarray:
    """The weight an FP8 convolution multiplies by (float64, ``w``'s layout); ``calibrated``: its
    calibrated codes instead of round-to-nearest ones."""
    fw = calibrated if calibrated is not None else quantize_conv(w, per_channel)
    from lc0py.backends.gpu.fp8_quant import e4m3_decode

    codes = e4m3_decode(fw.q).astype(np.float64)
    if codes.ndim == 3:
        return codes * fw.scale[None, :, None]
    return codes * fw.scale[:, None]


# ---- weights ---------------------------------------------------------------------------------
@dataclass
class Fp8ConvWeights(Generic[A]):
    q: A  # e4m3 codes, the packed weight's layout
    cs: A | None  # float32 [Cout]: per-channel factor s[n] / ref (None with per-tensor scales)


@dataclass
class Fp8ResidualWeights(Generic[A]):
    """FP8 codes of the tower's convolutions: ``convs[0]`` the input one, then each block's two
    (``None``: that convolution runs in fp16)."""

    convs: list[Fp8ConvWeights[A] | None]


def tower_convs(packed: ResidualModelWeights[Any]) -> list[Any]:
    """The tower's convolution weight records in order: input, block 0 conv1, conv2, block 1..."""
    convs = [packed.input]
    for b in packed.blocks:
        convs += [b.conv1, b.conv2]
    return convs


def tower_channels(s: ResidualShape) -> list[tuple[int, int]]:
    """``(c_in, c_out)`` of each of ``tower_convs``."""
    return [(PLANES, s.C)] + [(s.C, s.C)] * (2 * s.blocks)


def calibration_applies(per_channel: bool, winograd: bool) -> bool:
    """Whether calibrated codes (fp8_calibration.py) are used: im2col with per-channel scales (the
    layout and scales they were computed for); else round-to-nearest codes."""
    return per_channel and not winograd


def pack_residual_fp8(
    packed: ResidualModelWeights[np.ndarray], s: ResidualShape, per_channel: bool = True,
    calibrated: tuple[Fp8Weight, ...] | None = None,
) -> tuple[Fp8ResidualWeights[np.ndarray], tuple[float, ...], list[str]]:
    """Quantize the tower's convolutions of a host record (``pack_residual_model``'s, fp16): the
    FP8 record, each convolution's cuBLASLt alpha (``ref``; 1.0 for one left in fp16) and why each
    left in fp16 is ('' for those in FP8). ``calibrated``: the calibration's codes (GPTQ, per
    channel, im2col), used as they are instead of round-to-nearest ones."""
    if calibrated is not None and not calibration_applies(per_channel, s.winograd):
        calibrated = None
    convs: list[Fp8ConvWeights[np.ndarray] | None] = []
    refs: list[float] = []
    why: list[str] = []
    for i, (w, (c_in, c_out)) in enumerate(zip(tower_convs(packed), tower_channels(s), strict=True)):
        problem = conv_fp8_problem(c_in, c_out, s.winograd)
        why.append(problem)
        if problem:
            convs.append(None)
            refs.append(1.0)
            continue
        what = f"tower convolution {i}"
        fw = calibrated[i] if calibrated is not None else quantize_conv(w.w, per_channel, what)
        convs.append(Fp8ConvWeights(fw.q, fw.col_scale.astype(np.float32) if per_channel else None))
        refs.append(fw.ref)
    return Fp8ResidualWeights(convs), tuple(refs), why


# ---- the layer -------------------------------------------------------------------------------
class Fp8Conv3x3(Conv3x3):
    """``Conv3x3`` with its GEMM in FP8 (module docstring); the transforms and steps unchanged."""

    def __init__(
        self, base: Conv3x3, f8: Fp8Ops, w8: Fp8ConvWeights[int], ref: float, per_channel: bool
    ) -> None:
        self.__dict__.update(base.__dict__)
        self.f8, self.w8, self.ref, self.per_channel = f8, w8, ref, per_channel

    def multiply(self, ops: GpuOps, buf: Buffers, bsz: int, sms: int = 0) -> None:
        """The 36 Winograd GEMMs in FP8 (fp16 where ``winograd_batch_fp8`` says no): quantize V,
        one batched GEMM into ``wino_m``, and the per-channel factors over all of ``M`` (per-channel
        scales only). ``sms`` is not used:
        cuBLASLt takes no multiprocessor target."""
        cin, cout, tiles = self.c_in, self.c_out, bsz * 4
        if not winograd_batch_fp8(bsz):
            super().multiply(ops, buf, bsz, sms)
            return
        f8 = self.f8
        f8.quantize(buf, buf.wino_v, WINOGRAD_ELEMENTS * tiles * cin)
        shape = BatchedShape(tiles, cout, cin, WINOGRAD_ELEMENTS * cin, WINOGRAD_ELEMENTS, cin, cout * cin,
                             tiles * cout)
        f8.gemms.gemm_batched(ops.stream, shape, buf.fp8_x, self.w8.q, buf.wino_m, buf.fp8_scale, self.ref)
        if self.w8.cs is not None:  # per-channel scales
            f8.epilogue(buf, buf.wino_m, WINOGRAD_ELEMENTS * tiles, cout, self.w8.cs, buf.wino_m)

    def forward(
        self, ops: GpuOps, buf: Buffers, x: int, out: int, bsz: int, transformed: bool = False
    ) -> None:
        if self.winograd:
            super().forward(ops, buf, x, out, bsz, transformed)  # through multiply above
            return
        cin, cout, m = self.c_in, self.c_out, bsz * SEQ
        # quantize x (not its 9x larger columns: the same scale and codes), then im2col on the
        # e4m3 bytes: the fp16 kernel's 16-byte copies move two codes per "half", zeros off the
        # board are e4m3 zeros; cin % 16 == 0 keeps it on its vector path (bit copies)
        assert ops.elem == 2 and cin % FP8_ALIGN == 0 and (cin // 2) % ops.vec == 0, (cin, ops.vec)
        self.f8.quantize(buf, x, m * cin)
        ops.im2col3x3(buf.fp8_x, buf.cols, m, cin // 2)
        self.f8.gemms.gemm(ops.stream, m, cout, 9 * cin, buf.cols, self.w8.q, out, buf.fp8_scale, self.ref)
        bias, act = (self.w.b, self.act) if self.act is not None else (0, ACT_NONE)
        if self.w8.cs is not None:  # per-channel scales
            self.f8.epilogue(buf, out, m, cout, self.w8.cs, out, bias=bias, act=act)
        elif self.act is not None:
            ops.bias_act(out, bias, m, cout, act)


def tower_layers(model: GpuResidualModel) -> list[Conv3x3]:
    """The model's tower convolutions in ``tower_convs`` order."""
    layers = [model.input]
    for block in model.blocks:
        layers += [block.conv1, block.conv2]
    return layers


def build_residual_fp8(
    model: GpuResidualModel, ops: GpuOps, cache: KernelCache, packed: ResidualModelWeights[np.ndarray],
    s: ResidualShape, gemms: Any, per_channel: bool = True,
    calibrated: tuple[Fp8Weight, ...] | None = None,
) -> Fp8Resources:
    """Turn the fp16 residual ``model`` into the FP8 one in place: quantize and upload the tower's
    FP8 weights, swap its convolutions for ``Fp8Conv3x3``. ``gemms``: the FP8 GEMM provider with
    ``gemm`` and ``gemm_batched`` (``CublasLtFp8Batched`` on a device; tests pass a fake);
    ``calibrated``: calibrated codes (``pack_residual_fp8``)."""
    res = Fp8Resources(ops.p, gemms)
    try:
        host, refs, why = pack_residual_fp8(packed, s, per_channel, calibrated)
        for i, problem in enumerate(why):
            if problem:
                log.info("FP8: tower convolution %d in fp16 (%s)", i, problem)
        record, res.base, res.nbytes = upload_record(ops.p, host, ops.main)
        dev: Fp8ResidualWeights[int] = record
        res.weights = record  # closed with the network like the attention path's record
        f8 = Fp8Ops(ops, cache, gemms)
        layers = tower_layers(model)
        swapped = [
            Fp8Conv3x3(layer, f8, w8, ref, per_channel) if w8 is not None else layer
            for layer, w8, ref in zip(layers, dev.convs, refs, strict=True)
        ]
        model.input = swapped[0]
        for j, block in enumerate(model.blocks):
            block.conv1, block.conv2 = swapped[1 + 2 * j], swapped[2 + 2 * j]
    except BaseException:
        res.close()
        raise
    return res


__all__ = [
    "Fp8Conv3x3", "Fp8ResidualWeights", "build_residual_fp8", "calibration_applies", "conv_fp8_problem",
    "dequantized_conv",
    "pack_residual_fp8", "quantize_conv", "residual_fp8_refusal", "residual_per_channel",
]
