"""Which flash kernel runs (no GPU): the persistent kernel (``flash=v2``) by default on sm_90, the
one-shot kernel (``flash=v1``) elsewhere, either forced by ``flash=`` / ``attn_persistent``, the
persistent grid sized to the device, and the net's shape compiled into the chess kernels as the
same numbers their launches pass."""

from __future__ import annotations

import ast
import ctypes
from typing import Any

import numpy as np
import pytest

from lc0py.backends.base import PlanesBatch
from lc0py.backends.gpu.kernels import AttentionKernel, blocks_per_sm, choose_attention, flash_grid
from lc0py.backends.gpu.options import GpuOptions
from lc0py.backends.gpu.tuning import PARAM_LIMITS, FlashParams, default_params
from lc0py.errors import BackendOptionError
from lc0py.weights.presets import random_network
from tests.backends.gpu.test_layers import PointerPlatform

H100 = dict(vendor="nvidia", arch="sm_90", shared_optin=227 * 1024)
A100 = dict(vendor="nvidia", arch="sm_80", shared_optin=163 * 1024)
RDNA3 = dict(vendor="amd", arch="gfx1100", shared_optin=64 * 1024, scratch_per_warp=256)
V1, V2 = AttentionKernel.FLASH_MMA, AttentionKernel.FLASH_MMA_PERSISTENT


@pytest.mark.parametrize("depth", [32, 64, 96, 128])
@pytest.mark.parametrize(
    ("device", "text", "want"),
    [
        (H100, "", V2),  # automatic: the persistent kernel on sm_90
        (H100, "flash=on", V2),
        (H100, "flash=auto", V2),
        (H100, "flash=v1", V1),
        (H100, "attn_persistent=0", V1),
        (A100, "", V1),  # elsewhere the one-shot kernel stays the default ...
        (A100, "flash=v2", V2),  # ... and v2 is an opt-in
        (RDNA3, "", V1),
        (RDNA3, "flash=v2", V2),
    ],
    ids=lambda x: (
        x.get("arch") if isinstance(x, dict) else x.name if isinstance(x, AttentionKernel) else x or "default"
    ),
)
def test_kernel_choice(depth: int, device: dict, text: str, want: AttentionKernel) -> None:
    opts = GpuOptions.from_text(text)
    over = opts.flash_overrides
    ch = choose_attention(depth=depth, seq=64, fp16=True, flash=opts.flash, overrides=over, **device)
    if device is RDNA3 and want is V2 and depth > 32:  # 2 stages of d >= 64 tiles exceed 64 KiB of LDS
        assert ch.kernel is AttentionKernel.FALLBACK and "shared memory" in ch.reason
        return
    assert ch.kernel is want, ch.reason
    assert ch.params is not None and ch.params.persistent == (want is V2)
    if want is V2:
        assert "persistent" in ch.reason
    if device is RDNA3:
        return  # fp32's SIMT kernel needs more than 64 KiB of LDS from d = 64 (before v2 too)
    # fp32 storage has one kernel (SIMT) whatever is asked
    ch32 = choose_attention(depth=depth, seq=64, fp16=False, flash=opts.flash, overrides=over, **device)
    assert ch32.kernel is AttentionKernel.FLASH_SIMT
    assert ch32.params is not None and ch32.params.defines(depth, False, True)["LC0_FA_PERSIST"] == 0


def test_flash_off_is_the_fallback_for_both_kernels() -> None:
    opts = GpuOptions.from_text("flash=off")
    assert not opts.flash and opts.flash_overrides == {}
    ch = choose_attention(depth=32, seq=64, fp16=True, flash=opts.flash, **H100)
    assert ch.kernel is AttentionKernel.FALLBACK and "flash=off" in ch.reason


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("flash=v3", "flash='v3' is not one of on, off, auto, v1"),
        ("flash=v2,attn_persistent=0", "ask for different kernels"),
        ("flash=v1,attn_persistent=1", "ask for different kernels"),
        ("attn_persistent=2", "attn_persistent"),
        ("attn_copy_order=2", "attn_copy_order"),
    ],
)
def test_bad_flash_values_are_one_line(text: str, why: str) -> None:
    with pytest.raises(BackendOptionError) as info:
        GpuOptions.from_text(text)
    assert why in str(info.value) and "\n" not in str(info.value)


def test_v2_overrides_apply_on_top_of_its_own_defaults() -> None:
    ch = choose_attention(depth=32, seq=64, fp16=True, overrides={"stages": 3, "min_blocks": 3}, **H100)
    v2, _ = default_params(32, "sm_90")
    assert ch.kernel is V2 and ch.params == FlashParams(**{**v2.__dict__, "stages": 3, "min_blocks": 3})
    # too much shared memory for the device: the fallback with the reason, never a failed launch
    ch = choose_attention(depth=128, seq=64, fp16=True, overrides={"kv_tile": 64, "stages": 8}, **H100)
    assert ch.kernel is AttentionKernel.FALLBACK and "shared memory" in ch.reason
    assert PARAM_LIMITS["persistent"] == (0, 1, 1)


@pytest.mark.parametrize(
    ("depth", "blocks"),
    # d=32: 48 KiB a block -> 4 on an H100 SM (228 KiB, 1 KiB reserved per block); d=64: 72 KiB -> 3;
    # d=96: 96 KiB -> 2; d=128: 32-key tiles, 78 KiB -> 2
    [(32, 4), (64, 3), (96, 2), (128, 2)],
)
def test_persistent_grid_fills_the_device_once(depth: int, blocks: int) -> None:
    p, _ = default_params(depth, "sm_90")
    smem = p.shared_bytes(depth, True, False)
    assert blocks_per_sm(p, smem, H100["shared_optin"], "nvidia") == blocks
    heads = 768 // depth
    for batch in (1, 7, 64, 256, 1024):
        grid, block = flash_grid(64, heads, batch, p, True, 32, sm_count=132, resident=blocks)
        assert grid == (1, min(batch * heads, 132 * blocks), 1) and block == (128, 1, 1)
    # more blocks per SM than shared memory holds: capped, not over-subscribed
    big = FlashParams(stages=2, min_blocks=8, persistent=1)
    assert blocks_per_sm(big, big.shared_bytes(32, True, False), H100["shared_optin"]) == 4
    # two row blocks per pair (32-row blocks at seq 64): x = 2 and the slots are shared between them
    two = FlashParams(warps=2, stages=2, persistent=1)
    assert flash_grid(64, 24, 256, two, True, 32, sm_count=132, resident=4) == ((2, 264, 1), (64, 1, 1))


def test_one_shot_grid_is_unchanged() -> None:
    p, _ = default_params(32, "sm_90", persistent=0)
    assert flash_grid(64, 24, 256, p, True, 32, sm_count=132, resident=4) == ((1, 24, 256), (128, 1, 1))


def test_shared_bytes_counts_a_q_buffer_per_pair_in_flight() -> None:
    # d=32, persistent, 2 stages: 2 Q buffers (64 x 40 f16) + 2 x (K, V 64 x 40 + bias 64 x 72)
    p = FlashParams(stages=2, persistent=1)
    assert p.shared_bytes(32, True, False) == 2 * 64 * 40 * 2 + 2 * (2 * 64 * 40 * 2 + 64 * 72 * 2)
    p3 = FlashParams(stages=3, persistent=1)
    assert p3.shared_bytes(32, True, False) == 3 * 64 * 40 * 2 + 3 * (2 * 64 * 40 * 2 + 64 * 72 * 2)
    assert p.defines(32, True, False)["LC0_FA_PERSIST"] == 1


def test_copy_order_is_an_opt_in_define() -> None:
    """``attn_copy_order=1`` reaches the kernel as ``LC0_FA_COPY_ORDER`` on top of the v2 defaults
    (its effect on the tiles: the emulated kernel tests, ``*-bycolumn``); the default stays row order."""
    opts = GpuOptions.from_text("attn_copy_order=1")
    ch = choose_attention(depth=32, seq=64, fp16=True, overrides=opts.flash_overrides, **H100)
    assert ch.kernel is V2 and ch.params is not None
    assert ch.params.defines(32, True, False)["LC0_FA_COPY_ORDER"] == 1
    assert default_params(32, "sm_90")[0].defines(32, True, False)["LC0_FA_COPY_ORDER"] == 0


class _ModulePlatform(PointerPlatform):
    """``PointerPlatform`` that knows which compile each kernel handle came from and keeps each
    launch's integer arguments."""

    def __init__(self) -> None:
        super().__init__()
        self._modules: dict[int, tuple[str, ...]] = {}
        self.kernels: dict[int, tuple[str, tuple[str, ...]]] = {}  # handle -> (kernel, options)
        self.int_args: list[tuple[int, list[int]]] = []

    def load_module(self, binary: bytes) -> int:
        handle = super().load_module(binary)
        self._modules[handle] = ast.literal_eval(binary.decode())[1]
        return handle

    def get_function(self, module: int, name: str) -> int:
        handle = super().get_function(module, name)
        self.kernels[handle] = (name, self._modules[module])
        return handle

    def launch(self, fn: int, grid: Any, block: Any, smem: int, stream: int, args: list[Any]) -> None:
        super().launch(fn, grid, block, smem, stream, args)
        self.int_args.append((fn, [a.value for a in args if isinstance(a, ctypes.c_int)]))


@pytest.mark.parametrize("flash", ["v2", "v1"])
def test_the_flash_kernels_shape_constants_are_the_numbers_it_is_launched_with(
    flash: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chess flash kernels are compiled with the net's sequence length, heads and row strides
    as constants (``kernels.flash_shape_defines``), which replace the launch's arguments inside the
    kernel: every launch must pass exactly those numbers, or the kernel would read the wrong rows."""
    from lc0py.backends.gpu.network import GpuNetwork

    monkeypatch.setenv("LC0PY_KERNEL_CACHE", "off")  # every module reaches compile()
    plat = _ModulePlatform()
    net = random_network("t82", 2, layers=2)
    options = GpuOptions.from_text(f"graphs=off,max_batch=8,flash={flash}")
    gpu = GpuNetwork(plat, net, fp16=True, options=options)
    try:
        masks = np.random.default_rng(5).integers(1, 2**63, size=(5, 112), dtype=np.uint64)
        gpu.submit(PlanesBatch(masks, np.ones((5, 112), np.float32)))
        name = "flash_attention_persistent_f16" if flash == "v2" else "flash_attention_f16"
        flash_fns = {h for h, (kernel, _) in plat.kernels.items() if kernel == name}
        launches = [ints for fn, ints in plat.int_args if fn in flash_fns]
        assert len(launches) == 2  # one a layer
        s = gpu.shape
        for fn, ints in ((fn, ints) for fn, ints in plat.int_args if fn in flash_fns):
            options = dict(o[2:].split("=") for o in plat.kernels[fn][1] if o.startswith("-DLC0_FA_SHAPE_"))
            shape = {k: int(v) for k, v in options.items()}
            assert shape == {"LC0_FA_SHAPE_SEQ": 64, "LC0_FA_SHAPE_HEADS": s.H,
                             "LC0_FA_SHAPE_LD_QKV": s.qkv_ld, "LC0_FA_SHAPE_LD_O": s.D}
            ld_qkv, ld_o, seq, heads = ints[:4]  # then the batch (persistent kernel)
            assert (seq, heads, ld_qkv, ld_o) == (shape["LC0_FA_SHAPE_SEQ"], shape["LC0_FA_SHAPE_HEADS"],
                                                  shape["LC0_FA_SHAPE_LD_QKV"], shape["LC0_FA_SHAPE_LD_O"])
    finally:
        gpu.close()


def test_only_the_fp16_chess_kernels_take_shape_constants() -> None:
    from lc0py.backends.gpu.kernels import flash_shape_defines

    for kernel in (AttentionKernel.FLASH_MMA, AttentionKernel.FLASH_MMA_PERSISTENT):
        assert flash_shape_defines(kernel, 64, 24, 2336, 768)["LC0_FA_SHAPE_LD_QKV"] == 2336
    for kernel in (AttentionKernel.FLASH_SIMT, AttentionKernel.FALLBACK):
        assert flash_shape_defines(kernel, 64, 24, 2336, 768) == {}
