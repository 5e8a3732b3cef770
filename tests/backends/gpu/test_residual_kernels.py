"""The residual body's kernel decisions as pure functions of (options, shape, device, batch), on the CPU.

The devices are ``DeviceInfo`` records: an H100 (132 SMs, 227 KiB of opt-in shared memory), and
an RDNA3 AMD card (64 KiB LDS, 32-lane waves) and a CDNA one (64-lane waves).
"""

from __future__ import annotations

import logging

import pytest

from lc0py.backends.gpu.options import GpuOptions
from lc0py.backends.gpu.residual_kernels import (
    SE_BRANCH_SMS,
    SE_GATES_AUTO_MIN,
    WINOGRAD_MIN_FILTERS,
    FusedStep,
    ResidualKernels,
    branch_gemm_sms,
    choose_fused_step,
    choose_se_gates,
    choose_winograd,
    se_weights,
    split_staged_blocks,
)
from lc0py.gpu.platform import DeviceInfo

H100 = DeviceInfo("nvidia", 0, "H100", "sm_90", 132, 32, 48 << 10, 227 << 10, 80 << 30)
RDNA3 = DeviceInfo("amd", 0, "RX 7900", "gfx1100", 96, 32, 64 << 10, 64 << 10, 24 << 30)
CDNA = DeviceInfo("amd", 0, "MI250", "gfx90a", 104, 64, 64 << 10, 64 << 10, 64 << 30)
AUTO = GpuOptions()


@pytest.mark.parametrize(
    ("filters", "device", "winograd", "fused"),
    [
        (WINOGRAD_MIN_FILTERS - 1, H100, False, False),  # auto: im2col below 128 filters
        (64, H100, False, False),
        (128, H100, True, True),
        (256, H100, True, True),
        (512, H100, True, True),
        (640, H100, True, False),  # wider than the fused step's one thread a channel
        (160, CDNA, True, False),  # not whole 64-lane waves
        (256, CDNA, True, True),
    ],
)
def test_winograd_auto(filters: int, device: DeviceInfo, winograd: bool, fused: bool) -> None:
    choice = choose_winograd(AUTO, filters, device)
    assert (choice.winograd, choice.fused) == (winograd, fused)
    assert choice.reason.startswith(f"winograd=auto: {filters} filters")


def test_winograd_option_overrides_auto() -> None:
    off = choose_winograd(GpuOptions(winograd=False), 256, H100)
    assert (off.winograd, off.fused) == (False, False) and off.reason == "winograd=off: im2col + GEMM"
    on = choose_winograd(GpuOptions(winograd=True), 32, H100)
    assert (on.winograd, on.fused) == (True, True) and on.reason.startswith("winograd=on")
    odd = choose_winograd(GpuOptions(winograd=True), 48, H100)
    assert (odd.winograd, odd.fused) == (True, False) and "separate transform kernels" in odd.reason


def test_staged_threshold_is_one_and_a_half_positions_per_resident_block() -> None:
    blocks = split_staged_blocks(256, 32, 2, H100)
    assert blocks == 132  # one 1,024-thread block a multiprocessor
    threshold = (3 * blocks + 1) // 2  # 198 on an H100
    below = choose_fused_step(AUTO, 256, 32, True, H100, threshold - 1)
    at = choose_fused_step(AUTO, 256, 32, True, H100, threshold)
    assert below.kernel is FusedStep.SPLIT and at.kernel is FusedStep.STAGED
    assert at.reason == f"winograd_staged=auto: batch {threshold} >= 1.5 x 132 resident blocks"


@pytest.mark.parametrize(
    ("options", "c", "fp16", "device", "bsz", "kernel", "why"),
    [
        (GpuOptions(winograd_split=False), 256, True, H100, 1024, FusedStep.DIRECT, "winograd_split=off"),
        (AUTO, 512, True, H100, 1024, FusedStep.DIRECT, "2048 threads"),
        (GpuOptions(winograd_staged=False), 256, True, H100, 1024, FusedStep.SPLIT, "winograd_staged=off"),
        (GpuOptions(winograd_staged=True), 256, True, H100, 1, FusedStep.STAGED, "winograd_staged=on"),
        (GpuOptions(winograd_staged=True), 256, False, H100, 1024, FusedStep.SPLIT, "shared memory"),
        (GpuOptions(winograd_staged=True), 128, False, H100, 1024, FusedStep.STAGED, "winograd_staged=on"),
        (GpuOptions(winograd_staged=True), 256, True, RDNA3, 1024, FusedStep.SPLIT, "> device limit 65536"),
        (GpuOptions(winograd_staged=True), 36, True, H100, 1024, FusedStep.SPLIT, "16 bytes"),
    ],
)
def test_fused_step_choice_and_reason(
    options: GpuOptions, c: int, fp16: bool, device: DeviceInfo, bsz: int, kernel: FusedStep, why: str
) -> None:
    choice = choose_fused_step(options, c, 32, fp16, device, bsz)
    assert choice.kernel is kernel and why in choice.reason, choice


@pytest.mark.parametrize("setting", [True, False, None], ids=["on", "off", "auto"])
def test_se_gates_choice(setting: bool | None) -> None:
    opts = GpuOptions(se_gates=setting)
    for bsz in (1, SE_GATES_AUTO_MIN - 1, SE_GATES_AUTO_MIN, 4096):
        want = setting is True or (setting is None and bsz >= SE_GATES_AUTO_MIN)
        choice = choose_se_gates(opts, True, True, bsz)
        assert choice.outside is want, bsz
        assert choice.reason.startswith("se_gates=" + {True: "on", False: "off", None: "auto"}[setting])
        assert choose_se_gates(opts, False, True, bsz).outside is False  # no fused steps: se_residual
        assert choose_se_gates(opts, True, False, bsz).outside is False  # no SE unit


@pytest.mark.parametrize("setting", [True, False, None], ids=["on", "off", "auto"])
def test_se_weights_are_the_forms_some_batch_takes(setting: bool | None) -> None:
    opts = GpuOptions(se_gates=setting)
    for fused in (True, False):
        fold, plain = se_weights(opts, fused)
        outside = {choose_se_gates(opts, fused, True, n).outside for n in (1, SE_GATES_AUTO_MIN)}
        assert fold is (True in outside) and plain is (False in outside), (fused, fold, plain)


def test_branch_gemm_leaves_multiprocessors_to_the_side_stream() -> None:
    assert branch_gemm_sms(H100, can_fork=True) == 132 - SE_BRANCH_SMS
    assert branch_gemm_sms(H100, can_fork=False) == 0  # one stream: nothing runs beside the GEMM


def test_bound_choices_memoise_and_log_each_change(caplog: pytest.LogCaptureFixture) -> None:
    opts = GpuOptions(winograd=True)
    with caplog.at_level(logging.INFO, logger="lc0py.backends.gpu"):
        kernels = ResidualKernels(opts, H100, True, choose_winograd(opts, 256, H100), can_fork=True)
        steps = [kernels.fused_step(256, 32, n) for n in (64, 64, 100, 300, 1024, 64)]
        gates = [kernels.se_outside(True, n) for n in (64, 1024, 1024)]
    assert steps == [FusedStep.SPLIT] * 3 + [FusedStep.STAGED] * 2 + [FusedStep.SPLIT]
    assert gates == [False, True, True]
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0].startswith("winograd: (True, True) (winograd=on")
    step_lines = [line for line in lines if line.startswith("fused step")]
    # logged when a new batch size changes the answer; a batch size seen before is not decided again
    assert len(step_lines) == 2 and "batch 300 >= 1.5 x 132" in step_lines[1], step_lines
    assert sum(line.startswith("se gates") for line in lines) == 2
