"""The chess flash kernels alone on one GPU, on arrays the caller chose: what the GPU tests of
``flash=v1`` / ``flash=v2`` (and the scalar ``mma.h`` branch, the oracle) compare
(tests/backends/gpu/test_flash_v2_gpu.py), and what ``scripts/device/flash_v2_check`` times.

``FlashInputs.random`` draws fresh random Q/K/V rows (the fused QKV layout, with 16 extra columns
per token row as the smolgen compress columns give the real buffer), a smolgen-like bias and the
Q/V biases; ``run_flash`` compiles the kernel ``choose_attention`` picks for the overrides, launches
it as ``layers.Attention.forward`` does and returns O; ``attention_reference`` is the float64 truth
with the kernel's documented semantics (flash_attention.hip's header).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from lc0py.backends.gpu.kernels import (
    AttentionChoice,
    AttentionKernel,
    blocks_per_sm,
    choose_attention,
    flash_grid,
)
from lc0py.backends.gpu.ops import F, I, P
from lc0py.gpu.compile_cache import KernelCache
from lc0py.gpu.platform import KernelArg, Platform

SEQ = 64
LOG2E = 1.4426950408889634
EXTRA_COLUMNS = 16  # the compress columns after Q, K, V in the real QKV buffer (qkv_ld > 3D)


@dataclass
class FlashInputs:
    """Host arrays of one call: ``qkv [B, 64, 3D + 16]``, ``g [B, H, 64, 64]`` (natural-log units),
    ``bqkv [3D]`` (Q bias, K bias (cancels), V bias), all fp16."""

    heads: int
    depth: int
    qkv: np.ndarray
    g: np.ndarray
    bqkv: np.ndarray

    @property
    def batch(self) -> int:
        return int(self.qkv.shape[0])

    @property
    def d_model(self) -> int:
        return self.heads * self.depth

    @classmethod
    def random(cls, batch: int, heads: int, depth: int, seed: int) -> FlashInputs:
        rng = np.random.default_rng(seed)
        dm = heads * depth
        # float32 draws: batch 1024 x 24 heads is 250 M values, drawn in seconds on the device host
        qkv = rng.standard_normal((batch, SEQ, 3 * dm + EXTRA_COLUMNS), dtype=np.float32).astype(np.float16)
        g = (1.5 * rng.standard_normal((batch, heads, SEQ, SEQ), dtype=np.float32)).astype(np.float16)
        bqkv = (0.2 * rng.standard_normal(3 * dm, dtype=np.float32)).astype(np.float16)
        return cls(heads, depth, qkv, g, bqkv)


def attention_reference(x: FlashInputs) -> np.ndarray:
    """float64 ``softmax((Q + bq)·Kᵀ/√d + G)·V + bv`` per head, ``[B, 64, D]`` (Q + bq rounded to
    fp16 as the kernel stages it; G as uploaded, i.e. after its fp16 rounding of G·log2 e)."""
    dm, d = x.d_model, x.depth
    q = (x.qkv[..., :dm].astype(np.float32) + x.bqkv[:dm].astype(np.float32)).astype(np.float16)
    q64, k, v = q.astype(np.float64), x.qkv[..., dm : 2 * dm].astype(np.float64), x.qkv[..., 2 * dm : 3 * dm]
    g = uploaded_bias(x).astype(np.float64) / LOG2E
    out = np.empty((x.batch, SEQ, dm))
    for h in range(x.heads):
        sl = slice(h * d, (h + 1) * d)
        logits = np.einsum("bsd,btd->bst", q64[..., sl], k[..., sl]) / math.sqrt(d) + g[:, h]
        p = np.exp(logits - logits.max(axis=-1, keepdims=True))
        p /= p.sum(axis=-1, keepdims=True)
        out[..., sl] = np.einsum("bst,btd->bsd", p, v[..., sl].astype(np.float64))
    return out + x.bqkv[2 * dm :].astype(np.float64)


def uploaded_bias(x: FlashInputs) -> np.ndarray:
    """G as the backend hands it to the kernel: multiplied by log2(e), in fp16."""
    return (x.g.astype(np.float32) * np.float32(LOG2E)).astype(np.float16)


class FlashRunner:
    """Device copies of one ``FlashInputs`` and the kernels to run on them (one platform)."""

    def __init__(self, platform: Platform, x: FlashInputs) -> None:
        self.p, self.x = platform, x
        self.cache = KernelCache(platform)
        self.stream = platform.create_stream()
        self._ptrs: list[int] = []
        # The copies are asynchronous: their host arrays (the bias is a temporary) must live until
        # the stream has read them, so they are held here until the synchronize below.
        self._uploading: list[np.ndarray] = []
        self.qkv = self._upload(x.qkv)
        self.g = self._upload(uploaded_bias(x))
        self.bqkv = self._upload(x.bqkv)
        self.o_bytes = x.batch * SEQ * x.d_model * 2
        self.o = self._alloc(self.o_bytes)
        platform.synchronize(self.stream)
        self._uploading.clear()

    def _alloc(self, nbytes: int) -> int:
        ptr = int(self.p.alloc(nbytes))
        self._ptrs.append(ptr)
        return ptr

    def _upload(self, a: np.ndarray) -> int:
        a = np.ascontiguousarray(a)
        ptr = self._alloc(a.nbytes)
        self._uploading.append(a)
        self.p.copy_h2d(ptr, a, a.nbytes, self.stream)
        return ptr

    def choose(self, overrides: dict[str, int], scalar: bool = False) -> AttentionChoice:
        info = self.p.info
        return choose_attention(
            depth=self.x.depth, seq=SEQ, fp16=True, vendor=info.vendor, arch=info.arch,
            shared_optin=info.shared_mem_per_block_optin, overrides=overrides,
            scratch_per_warp=256 if scalar else info.mma_scratch_elems,
        )

    def prepare(
        self, overrides: dict[str, int], scalar: bool = False
    ) -> tuple[AttentionChoice, Callable[[], None]]:
        """The choice and a ``launch()`` that enqueues it (compiled once) on this runner's stream.
        ``scalar``: the ``LC0_MMA_SCALAR`` reference branch of mma.h instead of the tensor cores."""
        ch = self.choose(overrides, scalar)
        assert ch.is_flash and ch.params is not None, ch.reason
        info, x = self.p.info, self.x
        scratch = 256 if scalar else info.mma_scratch_elems
        defines = ch.params.defines(x.depth, fp16=True, bias_f32=False, scratch_per_warp=scratch)
        if scalar:
            defines = {**defines, "LC0_MMA_SCALAR": 1}
        fn = self.cache.function("flash_attention.hip", ch.kernel.value, defines)
        smem = ch.params.shared_bytes(x.depth, True, False, scratch)
        self.p.set_max_dynamic_shared(fn, smem)
        resident = blocks_per_sm(ch.params, smem, info.shared_mem_per_block_optin, info.vendor)
        grid, block = flash_grid(
            SEQ, x.heads, x.batch, ch.params, True, info.warp_size, sm_count=info.sm_count, resident=resident
        )
        dm, ld = x.d_model, x.qkv.shape[-1]
        args: list[KernelArg] = [
            P(self.qkv), P(self.qkv + 2 * dm), P(self.qkv + 4 * dm), I(ld), P(self.g), P(self.bqkv),
            P(self.bqkv + 4 * dm), P(self.o), I(dm), I(SEQ), I(x.heads), F(1.0 / math.sqrt(x.depth)),
        ]
        if ch.kernel is AttentionKernel.FLASH_MMA_PERSISTENT:
            args.append(I(x.batch))

        def launch() -> None:
            self.p.launch(fn, grid, block, smem, self.stream, args)

        return ch, launch

    def run(self, overrides: dict[str, int], scalar: bool = False) -> np.ndarray:  # [B, 64, D] float64
        """O ``[B, 64, D]`` as float64 from the kernel for ``overrides`` (O is NaN-poisoned first,
        so a row the kernel never writes shows)."""
        _, launch = self.prepare(overrides, scalar)
        self.p.memset(self.o, 0xFF, self.o_bytes, self.stream)  # 0xFFFF: fp16 NaN
        launch()
        out = np.empty((self.x.batch, SEQ, self.x.d_model), np.float16)
        self.p.copy_d2h(out, self.o, self.o_bytes, self.stream)
        self.p.synchronize(self.stream)
        return out.astype(np.float64)

    def time_ms(self, overrides: dict[str, int], iters: int = 50, warmup: int = 5) -> float:
        """Median milliseconds of one launch (device events around each, after ``warmup`` runs)."""
        _, launch = self.prepare(overrides)
        start, end = self.p.create_event(timing=True), self.p.create_event(timing=True)
        times = []
        try:
            for i in range(iters + warmup):
                start.record(self.stream)
                launch()
                end.record(self.stream)
                end.synchronize()
                if i >= warmup:
                    times.append(start.elapsed_ms(end))
        finally:
            self.p.destroy_event(start)
            self.p.destroy_event(end)
        return float(np.median(times))

    def close(self) -> None:
        self.p.synchronize(self.stream)
        for ptr in self._ptrs:
            self.p.free(ptr)
        self._ptrs.clear()
        self.p.destroy_stream(self.stream)
