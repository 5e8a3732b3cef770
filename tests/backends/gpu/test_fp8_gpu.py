"""On a GPU of compute capability 8.9+: the FP8 path against the numpy emulation of its own
arithmetic (fp8_emulation.py) and against float64, eager and through a captured graph, both scale
modes; below 8.9 the backend's one-line refusal. Marked ``gpu`` (skipped without an NVIDIA GPU)."""

from __future__ import annotations

import numpy as np
import pytest

from lc0py.backends.accuracy import RTOL_FP8, RTOL_FP16, fp8_tolerance, relative_error
from lc0py.weights.presets import random_network

pytestmark = pytest.mark.gpu


def _fp8_capable(platform) -> bool:  # type: ignore[no-untyped-def]
    from lc0py.backends.gpu.fp8 import fp8_refusal

    return not fp8_refusal(platform.info)


@pytest.mark.parametrize(
    ("scales", "subset"),
    [("channel", "all"), ("tensor", "all"), ("outer", "all"), ("channel", "qkv+out+smolgen")],
)
@pytest.mark.parametrize("preset", ["t82", "t82-h12"])
def test_fp8_matches_its_emulation(  # type: ignore[no-untyped-def]
    cuda_platform, preset: str, scales: str, subset: str
) -> None:
    if not _fp8_capable(cuda_platform):
        pytest.skip(f"{cuda_platform.info.arch}: no FP8")
    from lc0py.backends.gpu.fp8_emulation import fp8_forward
    from lc0py.backends.gpu.network import GpuNetwork
    from lc0py.backends.gpu.options import GpuOptions
    from lc0py.model import cast_network, forward
    from lc0py.tools.verify import random_planes_batch

    net = random_network(preset, 11, layers=2)
    batch = random_planes_batch(16, 5)  # no python-chess needed
    ref = forward(cast_network(net, np.float64), batch.dense(np.float64), np.float64)
    opts = GpuOptions.from_text(f"max_batch=16,precision=fp8,fp8_scales={scales},fp8_gemms={subset}")
    emu = fp8_forward(net, batch.dense(np.float32), per_channel=scales != "tensor", per_row=scales == "outer",
                      gemms=frozenset(opts.fp8_gemms))
    gpu = GpuNetwork(cuda_platform, net, fp16=True, options=opts)
    try:
        for flash in (True, False):
            out, _ = gpu.evaluate_traced(batch, flash=flash)
            for name in ("policy", "wdl", "moves_left"):
                got = getattr(out, name)
                assert np.all(np.isfinite(got)), name
                # the device is no farther from the FP8 emulation than FP8 is from exact arithmetic
                # (fp16 storage, summation order and the e4m3 codes those move: on an H100,
                # 2026-11-28, 0.72-0.78 x FP8's own error on the policy; a wiring or scale error is
                # many times that)
                fp8_err = relative_error(getattr(emu, name), getattr(ref, name))
                assert relative_error(got, getattr(emu, name)) <= fp8_err + RTOL_FP16, (flash, name)
                assert relative_error(got, getattr(ref, name)) <= fp8_tolerance(fp8_err), (flash, name)
        graphed = gpu.submit(batch).result()  # graphs on: a captured graph reads this batch's scales
        fp8_err = relative_error(emu.policy, ref.policy)
        assert relative_error(graphed.policy, emu.policy) <= fp8_err + RTOL_FP16
        assert relative_error(graphed.policy, ref.policy) <= RTOL_FP8
    finally:
        gpu.close()


@pytest.mark.parametrize("subset", ["all", "qkv+out+smolgen", "ffn"])
def test_fp8_fused_quantization_changes_no_bit(cuda_platform, subset: str) -> None:  # type: ignore[no-untyped-def]
    """fp8_fuse=on (the LayerNorms and FFN1's epilogue quantize their own outputs per row) gives
    the very outputs of fp8_fuse=off (separate fp8_quantize_rows passes), bit for bit: the fused
    kernels write the same codes and scales, so the numpy emulation holds for both."""
    if not _fp8_capable(cuda_platform):
        pytest.skip(f"{cuda_platform.info.arch}: no FP8")
    from lc0py.backends.gpu.network import GpuNetwork
    from lc0py.backends.gpu.options import GpuOptions
    from lc0py.tools.verify import random_planes_batch

    net = random_network("t82", 12, layers=3)
    batch = random_planes_batch(16, 6)
    outs = []
    for fuse in ("on", "off"):
        text = f"max_batch=16,precision=fp8,fp8_scales=outer,fp8_fuse={fuse},fp8_gemms={subset}"
        opts = GpuOptions.from_text(text)
        gpu = GpuNetwork(cuda_platform, net, fp16=True, options=opts)
        try:
            outs.append(gpu.submit(batch).result())
        finally:
            gpu.close()
    for name in ("policy", "wdl", "moves_left"):
        fused, separate = getattr(outs[0], name), getattr(outs[1], name)
        assert np.all(np.isfinite(fused)) and np.array_equal(fused, separate), name


def test_fp8_refused_below_ada(cuda_platform) -> None:  # type: ignore[no-untyped-def]
    if _fp8_capable(cuda_platform):
        pytest.skip(f"{cuda_platform.info.arch} has FP8: nothing to refuse")
    from lc0py.backends.registry import create_backend
    from lc0py.errors import BackendUnavailable

    with pytest.raises(BackendUnavailable, match="compute capability 8.9"):
        create_backend("cuda-fp8", random_network("tiny", 0))
