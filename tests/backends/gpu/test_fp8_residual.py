"""FP8 on residual (SE-ResNet) bodies without a GPU: weight scales, the numpy emulation against a
direct FP8 model, option validation and the forward pass wired on a pointer-recording platform."""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
import pytest

from lc0py.backends.base import PlanesBatch
from lc0py.backends.gpu.fp8_quant import e4m3_decode, quantize_activation, quantize_per_channel
from lc0py.backends.gpu.fp8_residual import (
    FP8_WINOGRAD_RMS_ERROR,
    conv_fp8_problem,
    dequantized_conv,
    fp8_winograd_choice,
    quantize_conv,
    residual_fp8_refusal,
)
from lc0py.backends.gpu.fp8_residual_emulation import fp8_conv, fp8_residual_forward, winograd_conv
from lc0py.backends.gpu.options import GpuOptions
from lc0py.backends.gpu.weights import leaves
from lc0py.backends.gpu.weights_residual import conv_matrix, winograd_filter
from lc0py.errors import UnsupportedNetError
from lc0py.gpu.cublaslt_batched import BatchedShape, batched_problem
from lc0py.model import cast_network
from lc0py.model.residual import conv2d, forward_residual
from lc0py.weights.presets import random_network
from lc0py.weights.residual import Conv
from tests.backends.gpu.test_fp8 import Fp16GemmCounter, RecordingGemms, _info


def _conv(rng: np.random.Generator, cin: int, cout: int) -> Conv:
    w = rng.standard_normal((cout, cin, 3, 3)) / np.sqrt(9 * cin)
    w[0] *= 40.0  # one loud output channel: per-channel scales matter
    return Conv(w.astype(np.float32), rng.standard_normal(cout).astype(np.float32) * 0.1)


# ---- weight scales -----------------------------------------------------------------------------
def test_winograd_weight_scale_is_per_channel_over_the_36_elements() -> None:
    rng = np.random.default_rng(0)
    u = winograd_filter(_conv(rng, 16, 32)).astype(np.float16).astype(np.float64)  # [36, 32, 16]
    fw = quantize_conv(u, per_channel=True)
    assert fw.q.shape == u.shape and fw.q.dtype == np.uint8 and fw.col_scale.shape == (32,)
    # the same codes and scales as quantizing channel n's 36 x 16 weights as one row
    rows = u.transpose(1, 0, 2).reshape(32, 36 * 16)
    direct = quantize_per_channel(rows)
    np.testing.assert_array_equal(fw.q.transpose(1, 0, 2).reshape(32, -1), direct.q)
    np.testing.assert_array_equal(fw.col_scale, direct.col_scale)
    # each channel's largest weight (over all 36 elements) lands on e4m3's largest value
    amax_n = np.abs(u).max(axis=(0, 2))
    np.testing.assert_allclose(fw.scale, np.maximum(amax_n, amax_n.max() / 256) / 448, rtol=1e-6)
    deq = dequantized_conv(u, per_channel=True)
    assert np.abs(deq - u).max() <= np.abs(u).max() * 2**-4 and not np.array_equal(deq, u)
    # per tensor: one scale, ones as the channel factor
    ft = quantize_conv(u, per_channel=False)
    assert np.all(ft.col_scale == 1) and ft.ref == pytest.approx(np.abs(u).max() / 448)


def test_im2col_weight_scale_matches_the_attention_path() -> None:
    w = conv_matrix(_conv(np.random.default_rng(1), 16, 16))
    fw, direct = quantize_conv(w, True), quantize_per_channel(w)
    np.testing.assert_array_equal(fw.q, direct.q)
    assert fw.ref == direct.ref


def test_nan_weight_refused() -> None:
    w = np.ones((36, 16, 16))
    w[3, 2, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        quantize_conv(w, True)


# ---- the emulation ------------------------------------------------------------------------------
def test_winograd_transforms_are_exact_without_quantization() -> None:
    rng = np.random.default_rng(2)
    conv = _conv(rng, 16, 24)
    x = rng.standard_normal((3, 16, 8, 8))
    got = winograd_conv(x, winograd_filter(conv), quantize=False) + np.asarray(conv.b)[None, :, None, None]
    np.testing.assert_allclose(got, conv2d(x, Conv(np.asarray(conv.w, np.float64), conv.b)), atol=1e-10)


def test_im2col_emulation_equals_a_direct_fp8_model() -> None:
    """Direct model: quantize x per tensor and W per output channel with the host encoder, decode
    both, convolve in float64."""
    rng = np.random.default_rng(3)
    conv = _conv(rng, 16, 16)
    x = np.maximum(rng.standard_normal((4, 16, 8, 8)), 0).astype(np.float32)
    x16 = x.astype(np.float16).astype(np.float32)
    q, scale = quantize_activation(x16.reshape(-1))
    xd = e4m3_decode(q).reshape(x.shape).astype(np.float64) * scale
    fw = quantize_per_channel(conv_matrix(conv).astype(np.float16).astype(np.float64))
    wd = e4m3_decode(fw.q).astype(np.float64) * fw.scale[:, None]
    wd = wd.reshape(16, 3, 3, 16).transpose(0, 3, 1, 2)
    direct = conv2d(xd, Conv(wd, np.asarray(conv.b, np.float64)))
    got = fp8_conv(x, conv, per_channel=True, winograd=False)
    np.testing.assert_allclose(got, direct, rtol=1e-5, atol=1e-5)
    exact = conv2d(x.astype(np.float64), conv)
    err = np.sqrt(((got - exact) ** 2).mean() / (exact**2).mean())
    assert 1e-3 < err < 0.08  # FP8's own few percent: quantization happened, nothing worse


def test_winograd_fp8_error_is_what_the_docs_say() -> None:
    rng = np.random.default_rng(4)
    conv = Conv((rng.standard_normal((64, 64, 3, 3)) / 24).astype(np.float32), np.zeros(64, np.float32))
    x = np.maximum(rng.standard_normal((4, 64, 8, 8)), 0).astype(np.float32)
    exact = conv2d(x.astype(np.float64), conv)

    def rms(a: np.ndarray) -> float:
        return float(np.sqrt(((a - exact) ** 2).mean() / (exact**2).mean()))

    im2col, wino = rms(fp8_conv(x, conv, True, False)), rms(fp8_conv(x, conv, True, True))
    assert im2col < 0.06 and 5 * im2col < wino < 2 * FP8_WINOGRAD_RMS_ERROR


@pytest.mark.parametrize("winograd", [False, True])
def test_residual_emulation_runs_a_net_within_fp8_error(winograd: bool) -> None:
    net = random_network("res-tiny", 0)
    planes = (np.random.default_rng(5).random((4, 112, 8, 8)) < 0.2).astype(np.float32)
    ref = forward_residual(cast_network(net, np.float64), planes.astype(np.float64), np.float64)
    emu = fp8_residual_forward(net, planes, per_channel=True, winograd=winograd)
    rel = np.abs(emu.policy - ref.policy).max() / np.abs(ref.policy).max()
    assert np.all(np.isfinite(emu.policy)) and np.all(np.isfinite(emu.wdl))
    assert 1e-4 < rel < (0.6 if winograd else 0.12)


# ---- options and refusals -----------------------------------------------------------------------
def test_refusals_and_alignment() -> None:
    assert residual_fp8_refusal("channel") == residual_fp8_refusal("tensor") == ""
    assert residual_fp8_refusal("outer") == ""
    assert residual_fp8_refusal("rows") == "fp8_scales=rows: a residual body takes outer or channel or tensor"
    assert "fp8_gemms=qkv+out picks attention-body GEMMs" in residual_fp8_refusal("channel", ("qkv", "out"))
    assert residual_fp8_refusal("tensor", GpuOptions.from_text("fp8_gemms=all").fp8_gemms) == ""
    assert conv_fp8_problem(112, 64, False) == ""  # K = 1008
    assert conv_fp8_problem(112, 64, True) == ""
    assert conv_fp8_problem(64, 64, False) == "" and conv_fp8_problem(32, 32, True) == ""
    assert "N=24" in conv_fp8_problem(16, 24, False)
    assert "K=24" in conv_fp8_problem(24, 32, True) and "K=216" in conv_fp8_problem(24, 32, False)
    assert batched_problem(BatchedShape(8, 32, 32, 36 * 32, 36, 32, 1024, 256)) == ""
    assert "multiple of 16" in batched_problem(BatchedShape(8, 32, 24, 36 * 24, 36, 24, 768, 256))


def test_winograd_choice_under_fp8() -> None:
    info = _info("nvidia", "sm_90")
    auto = fp8_winograd_choice(GpuOptions.from_text("precision=fp8"), 256, info)
    assert not auto.winograd and "im2col" in auto.reason
    forced = fp8_winograd_choice(GpuOptions.from_text("precision=fp8,winograd=on"), 256, info)
    assert forced.winograd


def test_backend_refuses_fp8_gemms_on_a_residual_net_before_device_work(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from lc0py.backends.gpu import backend as gb
    from lc0py.backends.options import BackendOptions

    def create(v: str, gpu: int) -> Any:
        raise AssertionError("no device work for a refused net")

    monkeypatch.setattr(gb.factory, "create_platform", create)
    net, opts = random_network("res-tiny", 0), BackendOptions.parse("fp8_gemms=qkv", "cuda-fp8")
    with pytest.raises(UnsupportedNetError, match=r"^--backend 'cuda-fp8': fp8_gemms=qkv picks attention"):
        gb.create_cuda_fp8(net, opts)


def test_default_fp8_scales_run_as_channel_on_a_residual_net() -> None:
    from lc0py.backends.gpu.fp8_residual import residual_per_channel

    default = GpuOptions.from_text("precision=fp8").fp8_scales  # outer, the attention default
    assert residual_fp8_refusal(default) == "" and residual_per_channel(default)
    assert residual_per_channel("channel") and not residual_per_channel("tensor")


# ---- wiring on a recording platform ---------------------------------------------------------------
class BatchedRecordingGemms(RecordingGemms):
    def __init__(self) -> None:
        super().__init__()
        self.batched: list[tuple[BatchedShape, int, int, int, int, float]] = []

    def gemm_batched(self, stream: int, s: BatchedShape, x_q: int, w_q: int, d: int, x_scale: int,
                     alpha: float) -> None:
        self.batched.append((s, x_q, w_q, d, x_scale, alpha))


@pytest.mark.parametrize("scales", ["channel", "tensor"])
@pytest.mark.parametrize("winograd", ["", "on"])
def test_residual_fp8_forward_wiring(scales: str, winograd: str) -> None:
    from lc0py.backends.gpu.network import GpuNetwork

    net = random_network("res-tiny", 3, filters=32, se_hidden=8)
    c, blocks = 32, net.num_blocks
    plat, gemms = Fp16GemmCounter(), BatchedRecordingGemms()
    text = f"graphs=off,max_batch=4,precision=fp8,fp8_scales={scales}"
    text += f",winograd={winograd}" if winograd else ""
    gpu = GpuNetwork(plat, net, fp16=True, options=GpuOptions.from_text(text), fp8_gemms=gemms)
    try:
        assert gpu.fp8 and gpu.shape.winograd == (winograd == "on")
        bsz = 4  # 16 Winograd tiles: M a multiple of 16
        masks = np.random.default_rng(0).integers(1, 2**63, size=(bsz, 112), dtype=np.uint64)
        gpu.submit(PlanesBatch(masks, np.ones((bsz, 112), np.float32)))
        buf = gpu.runner.buf
        m, tiles = bsz * 64, bsz * 4
        if winograd:
            assert not gemms.calls
            shapes = [b[0] for b in gemms.batched]
            want = [BatchedShape(tiles, c, 112, 36 * 112, 36, 112, c * 112, tiles * c)]
            want += [BatchedShape(tiles, c, c, 36 * c, 36, c, c * c, tiles * c)] * (2 * blocks)
            assert shapes == want
            assert {b[1] for b in gemms.batched} == {buf.fp8_x}
            assert {b[3] for b in gemms.batched} == {buf.wino_m}
            assert {b[4] for b in gemms.batched} == {buf.fp8_scale}
            weights = [b[2] for b in gemms.batched]
            alphas = [b[5] for b in gemms.batched]
            # the fp16 batched Winograd GEMMs are gone but for the policy head's two
            assert sum(1 for g in plat.fp16_gemms if g[0] == tiles) == 2
        else:
            assert not gemms.batched
            want3 = [(m, c, 9 * 112)] + [(m, c, 9 * c)] * (2 * blocks)
            assert [call[:3] for call in gemms.calls] == want3
            assert {call[3] for call in gemms.calls} == {buf.cols}  # the e4m3 im2col of fp8_x
            assert {call[6] for call in gemms.calls} == {buf.fp8_scale}
            weights = [call[4] for call in gemms.calls]
            alphas = [call[7] for call in gemms.calls]
            # the tower's fp16 GEMMs are gone; the policy head's 3x3 convolutions remain (C -> C, C -> P)
            assert (m, c, 9 * 112) not in plat.fp16_gemms
            assert plat.fp16_gemms.count((m, c, 9 * c)) == 1
        assert len(set(weights)) == 1 + 2 * blocks and all(plat.inside(w) for w in weights)
        if winograd:  # batch 3: 12 tiles, the Winograd GEMMs in fp16 for this batch
            before = len(gemms.batched)
            gpu.submit(PlanesBatch(masks[:3], np.ones((3, 112), np.float32)))
            assert len(gemms.batched) == before
            assert sum(1 for g in plat.fp16_gemms if g[0] == 12) == 2 + 1 + 2 * blocks
        assert all(a > 0 and np.isfinite(a) for a in alphas)
        assert all(plat.inside(p) for p in plat.used)
        pointers = {a.value for args in plat.launch_args for a in args if isinstance(a, ctypes.c_void_p)}
        fp8_weights = leaves(gpu._fp8.weights)
        read = set(weights) | pointers
        unread = [p for p in fp8_weights if p not in read]
        # every uploaded FP8 array is read (per-channel factors by the epilogues; none per tensor)
        assert not unread
        assert len(fp8_weights) == (2 if scales == "channel" else 1) * (1 + 2 * blocks)
    finally:
        gpu.close()
    assert gemms.closed


def test_unaligned_convolutions_stay_fp16() -> None:
    """24 filters: N = 24 is not a multiple of 16, every tower GEMM runs in fp16."""
    from lc0py.backends.gpu.network import GpuNetwork

    net = random_network("res-tiny", 3, filters=24, se_hidden=8)
    plat, gemms = Fp16GemmCounter(), BatchedRecordingGemms()
    opts = GpuOptions.from_text("graphs=off,max_batch=4,precision=fp8")
    gpu = GpuNetwork(plat, net, fp16=True, options=opts, fp8_gemms=gemms)
    try:
        masks = np.random.default_rng(0).integers(1, 2**63, size=(2, 112), dtype=np.uint64)
        gpu.submit(PlanesBatch(masks, np.ones((2, 112), np.float32)))
        assert not gemms.calls and not gemms.batched
        assert (128, 24, 9 * 112) in plat.fp16_gemms
    finally:
        gpu.close()


def test_emulation_with_no_fp8_convolution_is_the_fp16_path() -> None:
    """``convs=frozenset()``: every convolution on fp16 operands, within fp16's error of float64;
    one convolution in FP8 already moves it by FP8's."""
    net = random_network("res-tiny", 1)
    planes = (np.random.default_rng(6).random((4, 112, 8, 8)) < 0.2).astype(np.float32)
    ref = forward_residual(cast_network(net, np.float64), planes.astype(np.float64), np.float64)

    def rel(convs: frozenset[int] | None) -> float:
        out = fp8_residual_forward(net, planes, convs=convs)
        return float(np.abs(out.policy - ref.policy).max() / np.abs(ref.policy).max())

    assert rel(frozenset()) < 1e-2 < rel(frozenset({2}))
