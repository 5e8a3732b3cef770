"""The FP8 path's host logic without a GPU: refusals, options, the backend name, and the FP8 forward
pass wired on a platform that records pointers (every FP8 weight read by an FP8 GEMM, every
pointer inside an allocation, the fp16 GEMMs it replaces gone)."""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
import pytest

from lc0py.backends.base import PlanesBatch
from lc0py.backends.gpu.fp8 import FP8_MIN_CC, fp8_refusal, fp8_shape_refusal
from lc0py.backends.gpu.options import GpuOptions
from lc0py.backends.gpu.weights import leaves, net_shape
from lc0py.errors import BackendOptionError, BackendUnavailable
from lc0py.gpu.platform import DeviceInfo
from lc0py.weights.presets import random_network
from tests.backends.gpu.test_layers import PointerPlatform


def _info(vendor: str, arch: str) -> DeviceInfo:
    return DeviceInfo(vendor, 0, f"card {arch}", arch, 100, 32 if vendor == "nvidia" else 64, 48 << 10,
                      227 << 10, 1 << 34)


@pytest.mark.parametrize("arch", ["sm_89", "sm_90", "sm_100", "sm_120"])
def test_fp8_runs_from_compute_capability_8_9(arch: str) -> None:
    assert fp8_refusal(_info("nvidia", arch)) == ""


@pytest.mark.parametrize("arch", ["sm_75", "sm_80", "sm_86", "sm_87"])
def test_fp8_refused_before_ada(arch: str) -> None:
    reason = fp8_refusal(_info("nvidia", arch))
    assert "8.9" in reason and arch in reason and "cuda-fp16" in reason and "\n" not in reason
    assert int(arch[3:]) < FP8_MIN_CC


@pytest.mark.parametrize("arch", ["gfx942", "gfx90a", "gfx1100"])
def test_fp8_refused_on_amd(arch: str) -> None:
    reason = fp8_refusal(_info("amd", arch))
    assert "NVIDIA" in reason and "never run" in reason and "\n" not in reason


def test_fp8_scale_options() -> None:
    o = GpuOptions.from_text("precision=fp8,fp8_scales=tensor,fp8_fast_accum=on")
    assert o.fp8 and o.fp8_scales == "tensor" and o.fp8_fast_accum
    assert GpuOptions.from_text("").fp8_scales == "outer" and GpuOptions.from_text("").fp8_fuse
    assert GpuOptions.from_text("fp8_scales=channel").fp8_scales == "channel"
    assert not GpuOptions.from_text("fp8_fuse=off").fp8_fuse
    with pytest.raises(BackendOptionError, match="fp8_scales"):
        GpuOptions.from_text("fp8_scales=row")
    with pytest.raises(BackendOptionError, match="fp8_fuse"):
        GpuOptions.from_text("fp8_fuse=maybe")


def test_outer_scales_fall_back_to_channel_before_cublas_12_9(caplog: pytest.LogCaptureFixture) -> None:
    from types import SimpleNamespace

    from lc0py.backends.gpu.fp8 import effective_fp8_scales
    from lc0py.gpu.cublaslt import OUTER_VEC_MIN_VERSION

    assert OUTER_VEC_MIN_VERSION == 120900
    old = SimpleNamespace(supports_outer=False, version=120800)
    with caplog.at_level("WARNING"):
        assert effective_fp8_scales("outer", old) == "channel"
    assert "fp8_scales=outer needs cuBLASLt 12.9+" in caplog.text and "120800" in caplog.text
    assert effective_fp8_scales("outer", SimpleNamespace(supports_outer=True)) == "outer"
    assert effective_fp8_scales("tensor", old) == "tensor"
    assert effective_fp8_scales("channel", old) == "channel"


def test_precision_option() -> None:
    assert GpuOptions.from_text("precision=fp8").fp8
    assert GpuOptions.from_text("precision=half").precision == "fp16"
    assert GpuOptions.from_text("precision=FP32").precision == "fp32"
    assert GpuOptions.from_text("").precision is None and not GpuOptions.from_text("").fp8
    with pytest.raises(BackendOptionError, match=r"precision='fp4' is not one of fp32, fp16, fp8"):
        GpuOptions.from_text("precision=fp4")


def test_cuda_fp8_is_registered_and_never_auto() -> None:
    from lc0py.backends import registry

    assert "cuda-fp8" in registry.backend_names()
    entry = registry._REGISTRY["cuda-fp8"]
    assert not entry.auto and entry.device == "gpu"


def test_shape_refusal() -> None:
    s = net_shape(random_network("t82", 0, layers=1))
    assert fp8_shape_refusal(s) == ""
    from dataclasses import replace

    assert "FFN width 1000" in fp8_shape_refusal(replace(s, Fd=1000))


class _FakePlatform:
    """What GpuBackend sees of a device it refuses FP8 on."""

    def __init__(self, info: DeviceInfo) -> None:
        self.info, self.closed = info, False

    def close(self) -> None:
        self.closed = True


@pytest.mark.parametrize(("vendor", "arch"), [("nvidia", "sm_80"), ("amd", "gfx942")])
def test_backend_refuses_fp8_in_one_line(monkeypatch: pytest.MonkeyPatch, vendor: str, arch: str) -> None:
    from lc0py.backends.gpu import backend as gb
    from lc0py.backends.options import BackendOptions

    made: list[_FakePlatform] = []

    def create(v: str, gpu: int) -> _FakePlatform:
        made.append(_FakePlatform(_info(vendor, arch)))
        return made[-1]

    monkeypatch.setattr(gb.factory, "create_platform", create)
    net = random_network("tiny", 0)
    for name, text in (("cuda-fp8", ""), ("cuda-fp16", "precision=fp8")):
        with pytest.raises(BackendUnavailable) as info:
            create_fn = gb.create_cuda_fp8 if name == "cuda-fp8" else gb.create_cuda_fp16
            create_fn(net, BackendOptions.parse(text, name))
        msg = str(info.value)
        assert msg.startswith(f"--backend '{name}': FP8") and "\n" not in msg
        assert made[-1].closed


class RecordingGemms:
    """The FP8 GEMM provider's interface, recording each call's pointers and shape."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, int, int, int, int, int, int, float, bool, int]] = []
        self.closed = False

    def gemm(self, stream: int, m: int, n: int, k: int, x_q: int, w_q: int, d: int, x_scale: int,
             alpha: float, accumulate: bool = False, w_scale: int = 0) -> None:
        self.calls.append((m, n, k, x_q, w_q, d, x_scale, alpha, accumulate, w_scale))

    def close(self) -> None:
        self.closed = True


class Fp16GemmCounter(PointerPlatform):
    def __init__(self) -> None:
        super().__init__()
        self.fp16_gemms: list[tuple[int, int, int]] = []
        self.launch_args: list[list[Any]] = []

    def gemm(self, stream: int, m: int, n: int, k: int, a: int, *args: Any, **kw: Any) -> None:
        super().gemm(stream, m, n, k, a, *args, **kw)
        self.fp16_gemms.append((m, n, k))

    def launch(self, fn: int, grid: Any, block: Any, smem: int, stream: int, args: list[Any]) -> None:
        super().launch(fn, grid, block, smem, stream, args)
        self.launch_args.append(list(args))


@pytest.mark.parametrize("scales", ["channel", "tensor", "outer", "outer-unfused"])
@pytest.mark.parametrize("preset", ["tiny", "t82"])
def test_fp8_forward_wiring(preset: str, scales: str) -> None:
    _wiring(preset, scales, None)


@pytest.mark.parametrize("scales", ["channel", "tensor", "outer", "outer-unfused"])
@pytest.mark.parametrize("subset", ["qkv+out+smolgen", "ffn", "ffn2"])
def test_fp8_gemm_subsets(scales: str, subset: str) -> None:
    _wiring("t82", scales, subset)


def test_fp8_gemms_option() -> None:
    assert GpuOptions.from_text("fp8_gemms=ffn+qkv").fp8_gemms == ("qkv", "ffn1", "ffn2")
    assert GpuOptions.from_text("fp8_gemms=all").fp8_gemms == GpuOptions().fp8_gemms
    with pytest.raises(BackendOptionError, match="'attn' is not one of qkv, out, ffn1, ffn2, smolgen"):
        GpuOptions.from_text("fp8_gemms=qkv+attn")


def _wiring(preset: str, scales: str, subset: str | None) -> None:
    from lc0py.backends.gpu.network import GpuNetwork

    net = random_network(preset, 3, **({"layers": 2} if preset == "t82" else {}))
    s = net_shape(net)
    plat = Fp16GemmCounter()
    gemms = RecordingGemms()
    fuse = scales == "outer"
    scales = scales.removesuffix("-unfused")
    text = f"graphs=off,max_batch=4,precision=fp8,fp8_scales={scales},fp8_fuse={'on' if fuse else 'off'}"
    text += f",fp8_gemms={subset}" if subset else ""
    opts = GpuOptions.from_text(text)
    chosen = set(opts.fp8_gemms)
    gpu = GpuNetwork(plat, net, fp16=True, options=opts, fp8_gemms=gemms)
    try:
        assert gpu.fp8
        fp8_weights = leaves(gpu._fp8.weights)
        bsz = 4  # B·H a multiple of 16: the smolgen generator in FP8 too
        masks = np.random.default_rng(0).integers(1, 2**63, size=(bsz, 112), dtype=np.uint64)
        gpu.submit(PlanesBatch(masks, np.ones((bsz, 112), np.float32)))
        m = bsz * 64
        names = ("qkv", "out", "ffn1", "ffn2")
        per_layer = dict(zip(names, [(m, s.qkv_ld, s.E), (m, s.E, s.D), (m, s.Fd, s.E), (m, s.E, s.Fd)],
                             strict=True))
        want = []
        for _ in range(net.num_layers):
            want += [per_layer["qkv"]] if "qkv" in chosen else []
            want += [(bsz * s.H, 64 * 64, s.gs)] if s.smolgen and "smolgen" in chosen else []
            want += [per_layer[g] for g in names[1:] if g in chosen]
        assert [c[:3] for c in gemms.calls] == want
        # the GEMMs left out run in fp16, once per layer (a head may have one of the shapes once)
        from collections import Counter

        fp16_count = Counter(plat.fp16_gemms)
        assert net.num_layers >= 2
        for g in names:
            n16 = fp16_count[per_layer[g]]
            assert (n16 >= net.num_layers) if g not in chosen else (n16 <= 1), (g, n16)
        # every FP8 GEMM reads the quantized activation and its scale, writes inside an allocation
        buf = gpu.runner.buf
        assert {c[3] for c in gemms.calls} == {buf.fp8_x}
        # the activation's scale: per tensor, or (outer) per row with the weight's scale vector
        sg_calls = [c for c in gemms.calls if c[1] == 64 * 64]
        body = [c for c in gemms.calls if c[1] != 64 * 64]
        assert {c[6] for c in sg_calls} <= {buf.fp8_scale} and not any(c[9] for c in sg_calls)
        if scales == "outer":
            assert {c[6] for c in body} == {buf.fp8_row_scale} and all(plat.inside(c[9]) for c in body)
        else:
            assert {c[6] for c in body} == {buf.fp8_scale} and not any(c[9] for c in body)
        for c in gemms.calls:
            assert plat.inside(c[4]) and plat.inside(c[5]) and c[7] > 0 and np.isfinite(c[7])
        # per-tensor scales: the output projection and FFN2 accumulate into the residual stream
        # inside the GEMM; per-channel: into fp8_d, then the epilogue
        residual = [c for c in gemms.calls if c[1] == s.E]
        if scales in ("tensor", "outer"):
            assert all(c[8] for c in residual) and {c[5] for c in residual} <= {buf.x, buf.x1}
        else:
            assert not any(c[8] for c in gemms.calls) and {c[5] for c in residual} <= {buf.fp8_d}
        # each layer's FP8 weights distinct, and the smolgen generator shared
        weights = [c[4] for c in gemms.calls]
        per = len(chosen & set(names))
        assert len(set(weights)) == per * net.num_layers + (1 if s.smolgen and "smolgen" in chosen else 0)
        assert all(plat.inside(p) for p in plat.used)
        # epilogue launches get the per-channel factors (uploaded, inside an allocation)
        floats = [a.value for args in plat.launch_args for a in args if isinstance(a, ctypes.c_float)]
        assert all(np.isfinite(floats))
        # every uploaded FP8 array (codes by the GEMMs, per-channel factors by the epilogues) is read
        pointers = {a.value for args in plat.launch_args for a in args if isinstance(a, ctypes.c_void_p)}
        read = set(weights) | pointers | {c[9] for c in gemms.calls}
        assert not [p for p in fp8_weights if p not in read]
        if scales == "outer":
            _check_quantize_passes(gpu, plat, chosen, net.num_layers, fuse)
    finally:
        gpu.close()
    assert gemms.closed


def _check_quantize_passes(
    gpu: Any, plat: Fp16GemmCounter, chosen: set[str], layers: int, fuse: bool
) -> None:
    """Per-row scales: which kernel quantizes each FP8 GEMM's input. Fused, the LayerNorms write
    FFN1's input and the next layer's QKV input, FFN1's epilogue the hidden layer; only layer 0's
    input (from the embedding) and the attention outputs need a separate ``fp8_quantize_rows``."""
    from collections import Counter

    f8 = gpu.model.encoders[0].f8
    n = Counter(plat.launched)
    ln_fp8 = sum(n[fn] for fn, _ in f8._ln.values())
    if fuse:
        want_rows = (1 if "qkv" in chosen else 0) + layers * ("out" in chosen)
        want_rows += layers * ("ffn2" in chosen and "ffn1" not in chosen)
        want_ln = (layers - 1) * ("qkv" in chosen) + layers * ("ffn1" in chosen)
        want_hidden = layers * ("ffn1" in chosen and "ffn2" in chosen)
    else:
        want_rows, want_ln, want_hidden = layers * len(chosen & {"qkv", "out", "ffn1", "ffn2"}), 0, 0
    assert (n[f8.k_rows], ln_fp8, n[f8.k_bias_act_rows]) == (want_rows, want_ln, want_hidden)
    # no FFN1 epilogue pass where the hidden layer is quantized by its own kernel
    assert n[f8.k_epi] == layers * ("ffn1" in chosen) - want_hidden


def test_smolgen_generator_in_fp16_when_unaligned() -> None:
    """Batch 1 of a 24-head net: M = 24 for the generator GEMM, not a multiple of 16: fp16 there."""
    from lc0py.backends.gpu.network import GpuNetwork

    net = random_network("t82", 3, layers=2)
    plat, gemms = Fp16GemmCounter(), RecordingGemms()
    opts = GpuOptions.from_text("graphs=off,max_batch=4,precision=fp8")
    gpu = GpuNetwork(plat, net, fp16=True, options=opts, fp8_gemms=gemms)
    try:
        masks = np.random.default_rng(0).integers(1, 2**63, size=(1, 112), dtype=np.uint64)
        gpu.submit(PlanesBatch(masks, np.ones((1, 112), np.float32)))
        assert not [c for c in gemms.calls if c[1] == 64 * 64]
        assert (24, 64 * 64, net_shape(net).gs) in plat.fp16_gemms
    finally:
        gpu.close()
