"""Which kernels a residual (SE-ResNet) body runs: one pure function per decision, each with its reason.

Like ``kernels.choose_attention``, every decision is a function of the options record
(``GpuOptions``), the body's shape, the device (``DeviceInfo``) and, where it depends on it, the
batch, and returns the choice together with the reason the backend logs (info level, shown with
``-v``, as the attention choice is):

* ``choose_winograd``: 3x3 convolutions as Winograd F(4x4,3x3) or im2col, and whether through the
  fused output steps (once per network);
* ``choose_fused_step``: which fused step kernel (direct, split, staged split) a batch takes;
* ``choose_se_gates``: whether a batch makes a block's SE gates in the fused step or outside it;
* ``se_weights``: which SE fc1 forms to upload so that every batch finds the one it takes;
* ``branch_gemm_sms``: the multiprocessors a GEMM leaves to a side-stream branch beside it.

``GpuOps`` only launches what these chose; ``ResidualKernels`` binds them to one network, memoises
them per batch size and logs each decision when its answer changes. The geometry helpers
(``split_fused_smem`` ...) are the kernels' launch arithmetic, shared by the choice and the launch.
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass

from lc0py.backends.gpu.options import GpuOptions
from lc0py.gpu.platform import DeviceInfo

log = logging.getLogger("lc0py.backends.gpu")

#: Residual nets with at least this many filters run their 3x3 convolutions as Winograd
#: F(4x4,3x3) by default. Measured on an H100 (cuda-fp16, backendbench at 64/256/1024, 2026-11-23,
#: docs/performance.md): 20x256 +13/+46/+38 %, 40x512 +20/+43/+61 %; 6x64 (Maia) -5/-8/+26 %.
WINOGRAD_MIN_FILTERS = 128
#: The widest body ``winograd_output_fused`` takes (one thread per channel; its launch bounds).
FUSED_WINOGRAD_MAX_C = 512
SPLIT_FUSED_MAX_THREADS = 1024  # kernels/residual.hip LC0_SPLIT_MAX_THREADS: 4 tiles x c channels a block
#: Shared memory every device gives a block without opting in: the split kernel keeps within it.
SPLIT_FUSED_MAX_SMEM = 48 * 1024
#: se_gates=auto from this batch up: the gates cost a fixed ~14 us a block (the folded fc1 GEMM and
#: se_gates, both latency-bound) and save ~0.02 us a position in the second step (H100, res-20x256:
#: 0.87 of off at 256, 0.97 at 512, 1.01-1.03 at 1024; docs/performance.md)
SE_GATES_AUTO_MIN = 768
#: Multiprocessors the second convolution's GEMM leaves free for the SE branch beside it (its
#: sums -> gates kernels on the side stream). cuBLAS's Hopper GEMMs are persistent, one block a
#: multiprocessor: on all of them the branch waits for the GEMM's end. 16 of an H100's 132 gave
#: the forward pass 1.6 % at 1024 (4, 8: 0.4-0.5 %; 24: 1.4 %; docs/performance.md §10, log of
#: 2026-11-27).
SE_BRANCH_SMS = 16


# ---- launch arithmetic of the fused steps (kernels/residual.hip) --------------------------------
def fusable(c: int, warp_size: int) -> bool:
    """Whether ``winograd_output_fused`` takes ``c`` channels: one thread per channel, whole
    waves per position (its SE layer is a warp per output), at most ``FUSED_WINOGRAD_MAX_C``."""
    return c <= FUSED_WINOGRAD_MAX_C and c % warp_size == 0


def fused_positions_per_block(c: int) -> int:
    """Positions per block of the direct fused step: at least 256 threads where ``c`` allows."""
    return max(1, 256 // c)


def split_fused_smem(c: int, s: int) -> int:
    """Dynamic shared memory of the split kernel: per-tile sums [4][c], SE hidden [s] and the
    quadrants' edges next to the board's centre [4][8][c], in floats."""
    return (36 * c + s) * 4


def split_staged_smem(c: int, s: int, elem: int) -> int:
    """Dynamic shared memory of ``winograd_output_fused_split_staged``: the split kernel's
    (16-byte aligned), two stages of one position's ``M`` rows [36][4][c] and its skip rows
    [64][c] of ``elem``-byte elements: 217 KiB for 256 filters in fp16."""
    return (split_fused_smem(c, s) + 15) // 16 * 16 + (2 * 144 + 64) * c * elem


def split_staged_blocks(c: int, s: int, elem: int, device: DeviceInfo) -> int:
    """How many blocks of the staged split kernel are resident at once on the device (by shared
    memory, threads and the kernel's 64-register bound)."""
    threads = 4 * c
    per_sm = min(
        device.shared_mem_per_block_optin // split_staged_smem(c, s, elem),
        2048 // threads,
        65536 // (64 * threads),
    )
    return device.sm_count * max(1, per_sm)


def split_staged_grid(c: int, s: int, elem: int, device: DeviceInfo, bsz: int) -> int:
    """Persistent blocks: as many as are resident at once, never more than positions."""
    return max(1, min(bsz, split_staged_blocks(c, s, elem, device)))


# ---- the decisions --------------------------------------------------------------------------------
@dataclass(frozen=True)
class WinogradChoice:
    """3x3 convolutions as Winograd (``winograd``) or im2col, through the fused output steps
    (``fused``: ``winograd_output_fused*``) or the separate transform kernels."""

    winograd: bool
    fused: bool
    reason: str


def choose_winograd(options: GpuOptions, filters: int, device: DeviceInfo) -> WinogradChoice:
    """Winograd or im2col for a residual body of ``filters`` channels (``winograd=auto``: from
    ``WINOGRAD_MIN_FILTERS``), and whether the fused steps take its width on this device."""
    if options.winograd is None:
        winograd = filters >= WINOGRAD_MIN_FILTERS
        cmp = ">=" if winograd else "<"
        why = f"winograd=auto: {filters} filters {cmp} {WINOGRAD_MIN_FILTERS}"
    else:
        winograd = options.winograd
        why = f"winograd={'on' if winograd else 'off'}"
    if not winograd:
        return WinogradChoice(False, False, f"{why}: im2col + GEMM")
    if fusable(filters, device.warp_size):
        return WinogradChoice(True, True, f"{why}: Winograd F(4x4,3x3), fused output steps")
    return WinogradChoice(
        True,
        False,
        f"{why}: Winograd F(4x4,3x3), separate transform kernels ({filters} filters: not a multiple of "
        f"the {device.warp_size}-lane warp or > {FUSED_WINOGRAD_MAX_C})",
    )


class FusedStep(enum.Enum):
    """The three forms of the fused Winograd output step (kernels/residual.hip)."""

    DIRECT = "winograd_output_fused"  # one thread per channel, the whole board in registers
    SPLIT = "winograd_output_fused_split"  # a position's four tiles on four threads
    STAGED = "winograd_output_fused_split_staged"  # the split step in persistent, staged blocks


@dataclass(frozen=True)
class FusedStepChoice:
    kernel: FusedStep
    reason: str


def choose_fused_step(
    options: GpuOptions, c: int, s: int, fp16: bool, device: DeviceInfo, bsz: int
) -> FusedStepChoice:
    """The fused step kernel for a batch of ``bsz`` on a body of ``c`` filters whose step has an
    SE of ``s`` hidden units (0: none).

    Split where ``winograd_split`` is on and a position's ``4c`` threads and the kernel's shared
    memory fit one block without opting in; its staged form where its stages fit the device's
    opt-in shared memory in 16-byte rows and ``winograd_staged`` is on, or auto and the batch gives
    the resident blocks at least 1.5 positions each (with one there is nothing to copy ahead,
    only the extra trip through shared memory: H100, res-20x256, against the split kernel 0.87x
    at batch 64, 0.95x at 128, 1.00x at 192, 1.04x at 256; docs/performance.md). Else direct.
    """
    elem = 2 if fp16 else 4
    if not options.winograd_split:
        return FusedStepChoice(FusedStep.DIRECT, "winograd_split=off")
    if 4 * c > SPLIT_FUSED_MAX_THREADS or split_fused_smem(c, s) > SPLIT_FUSED_MAX_SMEM:
        return FusedStepChoice(
            FusedStep.DIRECT,
            f"{c} filters: the split step's {4 * c} threads or shared memory do not fit a block",
        )
    if options.winograd_staged is False:
        return FusedStepChoice(FusedStep.SPLIT, "winograd_staged=off")
    if (c * elem) % 16:
        return FusedStepChoice(FusedStep.SPLIT, f"{c} filters: rows not a multiple of 16 bytes for cp.async")
    smem = split_staged_smem(c, s, elem)
    if smem > device.shared_mem_per_block_optin:
        return FusedStepChoice(
            FusedStep.SPLIT,
            f"staged step needs {smem} B shared memory > device limit {device.shared_mem_per_block_optin}",
        )
    if options.winograd_staged is True:
        return FusedStepChoice(FusedStep.STAGED, "winograd_staged=on")
    blocks = split_staged_blocks(c, s, elem, device)
    if 2 * bsz >= 3 * blocks:
        return FusedStepChoice(
            FusedStep.STAGED, f"winograd_staged=auto: batch {bsz} >= 1.5 x {blocks} resident blocks"
        )
    return FusedStepChoice(
        FusedStep.SPLIT, f"winograd_staged=auto: batch {bsz} < 1.5 x {blocks} resident blocks"
    )


@dataclass(frozen=True)
class SeGatesChoice:
    """``outside``: the SE gates of a block are made outside the fused step (sums, folded fc1
    GEMM, ``se_gates`` kernel on the side stream), else inside it."""

    outside: bool
    reason: str


def choose_se_gates(options: GpuOptions, fused: bool, has_se: bool, bsz: int) -> SeGatesChoice:
    """Where a block with an SE unit makes its gates for a batch of ``bsz`` (``se_gates``;
    ``auto``: outside from ``SE_GATES_AUTO_MIN`` positions)."""
    if not has_se:
        return SeGatesChoice(False, "no SE unit")
    if not fused:
        return SeGatesChoice(False, "no fused Winograd steps: the SE is in se_residual")
    if options.se_gates is not None:
        return SeGatesChoice(options.se_gates, f"se_gates={'on' if options.se_gates else 'off'}")
    if bsz >= SE_GATES_AUTO_MIN:
        return SeGatesChoice(True, f"se_gates=auto: batch {bsz} >= {SE_GATES_AUTO_MIN}")
    return SeGatesChoice(False, f"se_gates=auto: batch {bsz} < {SE_GATES_AUTO_MIN}")


def se_weights(options: GpuOptions, fused: bool) -> tuple[bool, bool]:
    """``(fold, plain)``: upload SE fc1 folded with the second convolution (for batches that make
    the gates outside the step) and/or as it is (inside): exactly the forms some batch takes
    under ``choose_se_gates``, so no upload is dead weight."""
    fold = fused and options.se_gates is not False
    plain = not (fold and options.se_gates is True)
    return fold, plain


def branch_gemm_sms(device: DeviceInfo, can_fork: bool) -> int:
    """The multiprocessor target of a GEMM beside a side-stream branch (``Platform.gemm``'s
    ``sms``): the device's count less ``SE_BRANCH_SMS``; 0 (all) without a side stream."""
    if not can_fork or SE_BRANCH_SMS <= 0:
        return 0
    return max(1, device.sm_count - SE_BRANCH_SMS)


class ResidualKernels:
    """The decisions above bound to one network's options, device and precision: memoised per
    (width, SE size, batch) -- a forward pass asks once per convolution -- and logged (info,
    ``-v``) when a batch size not seen before changes a decision's answer."""

    def __init__(
        self, options: GpuOptions, device: DeviceInfo, fp16: bool, winograd: WinogradChoice, can_fork: bool
    ) -> None:
        self.options, self.device, self.fp16, self.winograd = options, device, fp16, winograd
        #: ``branch_gemm_sms`` of this device (``can_fork``: the platform has a side stream)
        self.branch_sms = branch_gemm_sms(device, can_fork)
        self._steps: dict[tuple[int, int, int], FusedStep] = {}
        self._gates: dict[tuple[bool, int], bool] = {}
        self._last: dict[str, object] = {}
        self._note("winograd", (winograd.winograd, winograd.fused), winograd.reason)

    def _note(self, decision: str, answer: object, reason: str) -> None:
        if self._last.get(decision) != answer:
            self._last[decision] = answer
            log.info("%s: %s (%s)", decision, answer, reason)

    def fused_step(self, c: int, s: int, bsz: int) -> FusedStep:
        """``choose_fused_step`` for this network."""
        key = (c, s, bsz)
        kernel = self._steps.get(key)
        if kernel is None:
            choice = choose_fused_step(self.options, c, s, self.fp16, self.device, bsz)
            self._note(f"fused step ({c} filters, SE {s})", choice.kernel.value, choice.reason)
            kernel = self._steps[key] = choice.kernel
        return kernel

    def se_outside(self, has_se: bool, bsz: int) -> bool:
        """``choose_se_gates`` for this network."""
        key = (has_se, bsz)
        outside = self._gates.get(key)
        if outside is None:
            choice = choose_se_gates(self.options, self.winograd.fused, has_se, bsz)
            self._note("se gates outside the step", choice.outside, choice.reason)
            outside = self._gates[key] = choice.outside
        return outside
