"""On a GPU: residual (SE-ResNet) nets -- ``GpuNetwork`` vs the numpy float64 reference.

Marked ``gpu`` (skipped without an NVIDIA GPU). Random nets: res-tiny with each policy head,
with and without SE, WDL and classical value; res-20x256 with two blocks (the real widths); real
nets maia-1100 / meangirl-8 copied from ``../shared/nets`` or ``.nets/`` into tmp (skipped when absent).
fp32 within 1e-4 relative, fp16 within 1e-2, per-block intermediates included. ``se_gates`` as
the backend defaults it (auto: the 1,100-position batches make the gates outside the step).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lc0py.weights.loader import load_network
from lc0py.weights.presets import random_network
from tests.backends.conformance import (
    RTOL_FP16,
    RTOL_FP32,
    check_named_backend,
    relative_error,
    traced_reference,
)
from tests.shared_files import real_net

pytestmark = pytest.mark.gpu


NETS = {
    "res-tiny-conv": ("res-tiny", {}),
    "res-tiny-relu-noSE-tanh": ("res-tiny", dict(default_activation="relu", se=False, wdl=False)),
    "res-tiny-classical": ("res-tiny", dict(policy="classical", policy_channels=32, moves_left=False)),
    "res-tiny-attention": ("res-tiny", dict(policy="attention", policy_embedding=32, policy_dmodel=32)),
    "res-20x256-2blocks": ("res-20x256", dict(blocks=2)),
    "t78-2blocks": ("t78", dict(blocks=2)),
    # Winograd forced on narrow bodies: winograd_output_fused with several positions per block
    "res-32-winograd": ("res-tiny", dict(filters=32, se_hidden=8, winograd=True)),
    "res-64-noSE-classical-winograd": (
        "res-tiny", dict(filters=64, se=False, policy="classical", policy_channels=32, winograd=True)
    ),
}


def _check(
    platform: Any, net: Any, fp16: bool, label: str, winograd: bool | None = None, *, size: int = 9,
    staged: bool | None = None, split: bool = True, se_gates: bool | None = None,
) -> None:
    from lc0py.backends.gpu.network import GpuNetwork
    from lc0py.backends.gpu.options import GpuOptions

    opts = GpuOptions(  # winograd None: auto, as the backend chooses it
        max_batch=max(16, size), winograd=winograd, winograd_staged=staged, winograd_split=split,
        se_gates=se_gates,
    )
    gpu = GpuNetwork(platform, net, fp16=fp16, options=opts)
    try:
        batch, ref, trace = traced_reference(net, size)
        limit = RTOL_FP16 if fp16 else RTOL_FP32
        out, taps = gpu.evaluate_traced(batch, flash=False)
        errs = {"policy": relative_error(out.policy, ref.policy), "wdl": relative_error(out.wdl, ref.wdl)}
        if net.moves_left is not None:
            errs["moves_left"] = relative_error(out.moves_left, ref.moves_left)
        last = f"block{len(net.blocks) - 1}.output"
        for name in ("input", last):  # NCHW reference -> the GPU's NHWC [B, 64, C]
            want = trace[name].reshape(len(batch), net.filters, 64).transpose(0, 2, 1)
            errs[name] = relative_error(taps[name], want)
        assert all(e <= limit for e in errs.values()), f"{label} fp16={fp16}: {errs}"
        # graphs + async path, odd batch size (padding rows inside a graph bucket)
        got = gpu.submit(batch).result()
        assert relative_error(got.policy, ref.policy) <= limit
        assert relative_error(got.wdl, ref.wdl) <= limit
    finally:
        gpu.close()


@pytest.mark.parametrize("fp16", [True, False], ids=["fp16", "fp32"])
@pytest.mark.parametrize("case", sorted(NETS))
def test_residual_matches_reference(cuda_platform, case: str, fp16: bool) -> None:  # type: ignore[no-untyped-def]
    preset, overrides = NETS[case]
    overrides = dict(overrides)
    winograd = overrides.pop("winograd", None)
    _check(cuda_platform, random_network(preset, 7, **overrides), fp16, case, winograd)


@pytest.mark.parametrize("kernel", ["staged", "direct", "split"])
@pytest.mark.parametrize(("case", "size"), [("res-20x256-2blocks", 300), ("res-32-winograd", 1100)])
def test_fused_winograd_kernels_on_large_batches(  # type: ignore[no-untyped-def]
    cuda_platform, case: str, size: int, kernel: str
) -> None:
    """The three kernels of the fused Winograd step (fp16), on batches with more positions than
    the staged kernel has persistent blocks (each block loops over double-buffered stages) and,
    for the direct kernel at 32 filters (8 positions per block), a partial last group."""
    from lc0py.backends.gpu.residual_kernels import fused_positions_per_block

    preset, overrides = NETS[case]
    overrides = dict(overrides)
    overrides.pop("winograd", None)
    net = random_network(preset, 11, **overrides)
    groups = -(-size // fused_positions_per_block(net.filters))
    assert groups > cuda_platform.info.sm_count  # the staged kernel's blocks each take several
    staged, split = kernel == "staged", kernel in ("split", "staged")
    _check(cuda_platform, net, True, f"{case} {kernel}", True, size=size, staged=staged, split=split)


@pytest.mark.parametrize("fp16", [True, False], ids=["fp16", "fp32"])
@pytest.mark.parametrize("kernel", ["staged", "direct", "split"])
@pytest.mark.parametrize(("case", "size"), [("res-20x256-2blocks", 300), ("res-32-winograd", 40)])
def test_se_gates_matches_reference(  # type: ignore[no-untyped-def]
    cuda_platform, case: str, size: int, kernel: str, fp16: bool
) -> None:
    """The SE outside the fused step (per-tile sums from the first convolution's step, the folded
    fc1 GEMM, se_gates, the gated second step) on each of the three step kernels."""
    preset, overrides = NETS[case]
    overrides = dict(overrides)
    overrides.pop("winograd", None)
    net = random_network(preset, 13, **overrides)
    staged, split = kernel == "staged", kernel in ("split", "staged")
    _check(
        cuda_platform, net, fp16, f"{case} {kernel} se_gates", True, size=size, staged=staged,
        split=split, se_gates=True,
    )


@pytest.mark.parametrize("fp16", [True, False], ids=["fp16", "fp32"])
@pytest.mark.parametrize("winograd", [None, True], ids=["auto", "winograd"])
@pytest.mark.parametrize("name", ["maia-1100", "meangirl-8"])
def test_real_residual_net(  # type: ignore[no-untyped-def]
    cuda_platform, name: str, fp16: bool, winograd: bool | None, tmp_path: Path
) -> None:
    _check(cuda_platform, load_network(real_net(tmp_path, name)), fp16, name, winograd)


@pytest.mark.parametrize(("name", "rtol"), [("cuda", RTOL_FP32), ("cuda-fp16", RTOL_FP16)])
def test_residual_conformance(cuda_platform, name: str, rtol: float) -> None:  # type: ignore[no-untyped-def]
    check_named_backend(name, random_network("res-tiny", 3), rtol, "max_batch=8", batch_sizes=(1, 7, 33))
