"""On a GPU of compute capability 8.9+: the residual FP8 path (im2col, and Winograd through the
strided-batched cuBLASLt GEMM) against the numpy emulation of its own arithmetic
(fp8_residual_emulation.py) and against float64, eager and through a captured graph, both weight
scale modes. Marked ``gpu`` (skipped without an NVIDIA GPU)."""

from __future__ import annotations

import numpy as np
import pytest

from lc0py.backends.accuracy import RTOL_FP8, RTOL_FP16, fp8_tolerance, relative_error
from lc0py.weights.presets import random_network

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("scales", ["channel", "tensor"])
@pytest.mark.parametrize(("filters", "winograd"), [(32, "off"), (64, "off"), (32, "on"), (128, "on")])
def test_residual_fp8_matches_its_emulation(  # type: ignore[no-untyped-def]
    cuda_platform, filters: int, winograd: str, scales: str
) -> None:
    from lc0py.backends.gpu.fp8 import fp8_refusal

    if fp8_refusal(cuda_platform.info):
        pytest.skip(f"{cuda_platform.info.arch}: no FP8")
    from lc0py.backends.gpu.fp8_residual_emulation import fp8_residual_forward
    from lc0py.backends.gpu.network import GpuNetwork
    from lc0py.backends.gpu.options import GpuOptions
    from lc0py.model import cast_network, forward
    from lc0py.tools.verify import random_planes_batch

    net = random_network("res-tiny", 11, filters=filters, se_hidden=8)
    batch = random_planes_batch(16, 5)  # 64 Winograd tiles: the batched FP8 GEMM runs
    ref = forward(cast_network(net, np.float64), batch.dense(np.float64), np.float64)
    opts = GpuOptions.from_text(f"max_batch=16,precision=fp8,fp8_scales={scales},winograd={winograd}")
    gpu = GpuNetwork(cuda_platform, net, fp16=True, options=opts)
    try:
        assert gpu.shape.winograd == (winograd == "on")
        emu = fp8_residual_forward(net, batch.dense(np.float32), scales == "channel", winograd == "on")
        out, _ = gpu.evaluate_traced(batch, flash=False)
        for name in ("policy", "wdl", "moves_left"):
            got = getattr(out, name)
            assert np.all(np.isfinite(got)), name
            # no farther from the emulation than FP8 is from exact arithmetic: a wrong scale,
            # stride or layout is many times that
            fp8_err = relative_error(getattr(emu, name), getattr(ref, name))
            assert relative_error(got, getattr(emu, name)) <= fp8_err + RTOL_FP16, name
            assert relative_error(got, getattr(ref, name)) <= fp8_tolerance(fp8_err), name
        graphed = gpu.submit(batch).result()  # graphs on: the captured graph reads this batch's scale
        fp8_err = relative_error(emu.policy, ref.policy)
        assert relative_error(graphed.policy, emu.policy) <= fp8_err + RTOL_FP16
        assert relative_error(graphed.policy, ref.policy) <= RTOL_FP8
    finally:
        gpu.close()


@pytest.mark.parametrize("filters", [32, 64])
def test_calibrated_residual_fp8_matches_its_emulation(  # type: ignore[no-untyped-def]
    cuda_platform, tmp_path, monkeypatch, filters: int
) -> None:
    """With a cached calibration (fp8_calibration.py) the device uploads the calibrated codes:
    held to the emulation given the same record, eager and graphed."""
    from lc0py.backends.gpu.fp8 import fp8_refusal

    if fp8_refusal(cuda_platform.info):
        pytest.skip(f"{cuda_platform.info.arch}: no FP8")
    from lc0py.backends.gpu.fp8_calibration import calibrate, store_calibration
    from lc0py.backends.gpu.fp8_residual_emulation import fp8_residual_forward
    from lc0py.backends.gpu.network import GpuNetwork
    from lc0py.backends.gpu.options import GpuOptions
    from lc0py.model import cast_network, forward
    from lc0py.tools.verify import random_planes_batch

    monkeypatch.setenv("LC0PY_CACHE_DIR", str(tmp_path / "cache"))
    net = random_network("res-tiny", 11, filters=filters, se_hidden=8)
    cal = calibrate(net, random_planes_batch(64, 9).dense(np.float32))
    assert store_calibration(cal) is not None
    batch = random_planes_batch(16, 5)
    ref = forward(cast_network(net, np.float64), batch.dense(np.float64), np.float64)
    opts = GpuOptions.from_text("max_batch=16,precision=fp8")
    gpu = GpuNetwork(cuda_platform, net, fp16=True, options=opts)
    try:
        assert gpu.fp8_calibration is not None and gpu.fp8_calibration.digest == cal.digest
        emu = fp8_residual_forward(net, batch.dense(np.float32), calibration=gpu.fp8_calibration)
        rtn = fp8_residual_forward(net, batch.dense(np.float32))
        out, _ = gpu.evaluate_traced(batch, flash=False)
        graphed = gpu.submit(batch).result()
        for got in (out, graphed):
            for name in ("policy", "wdl"):
                fp8_err = relative_error(getattr(emu, name), getattr(ref, name))
                assert np.all(np.isfinite(getattr(got, name))), name
                assert relative_error(getattr(got, name), getattr(emu, name)) <= fp8_err + RTOL_FP16, name
        # the device is nearer the calibrated emulation than the round-to-nearest one
        assert relative_error(out.policy, emu.policy) < relative_error(out.policy, rtn.policy)
    finally:
        gpu.close()
