"""GPU implementations of ``lc0py.attention``: the flash kernel (``kernels/flash_attention.hip``,
general entry ``attention_f16`` -- the same source and body as the chess net's attention) and a
naive path (two strided-batched cuBLAS/hipBLAS GEMMs around ``softmax_rows``, materialising the
``[B, H, Lq, Lk]`` scores), on ``DeviceArray``\\ s (fp16 storage, fp32 accumulation).

``GpuAttention`` owns one ``Platform`` (created on first use, on ``device``; no vendor package is
imported before that; its device is made current at every entry point, so engines and backends
on other devices can share the thread), a kernel cache and a stream, and counts the device
memory it allocates, so a benchmark can report each path's peak (``peak_bytes``: the operator's
own buffers -- inputs, outputs, scores -- not the BLAS library's workspace).
"""

from __future__ import annotations

import ctypes
import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from lc0py.attention.reference import Shape, attention_shape, bias_shape, combined_bias
from lc0py.backends.gpu.kernels import flash_grid
from lc0py.backends.gpu.tuning import FlashParams, default_params
from lc0py.errors import UsageError
from lc0py.gpu.compile_cache import KernelCache
from lc0py.gpu.factory import create_platform
from lc0py.gpu.platform import KernelArg, Platform

P, I, F, LL = ctypes.c_void_p, ctypes.c_int, ctypes.c_float, ctypes.c_longlong
DEPTHS = (16, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256)


class DeviceArray:
    """An fp16 array in device memory owned by a ``GpuAttention`` (``free`` or ``with`` releases it)."""

    def __init__(self, engine: GpuAttention, ptr: int, shape: tuple[int, ...]) -> None:
        self.engine, self.ptr, self.shape = engine, ptr, tuple(int(n) for n in shape)
        self.dtype = np.dtype(np.float16)

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape)) * 2

    def numpy(self) -> np.ndarray:
        """Copy to the host (waits for the engine's stream)."""
        out = np.empty(self.shape, np.float16)
        self.engine.platform.bind_thread()
        self.engine.platform.copy_d2h(out, self.ptr, self.nbytes, self.engine.stream)
        self.engine.platform.synchronize(self.engine.stream)
        return out

    def free(self) -> None:
        if self.ptr:
            self.engine.free(self.ptr)
            self.ptr = 0

    def __enter__(self) -> DeviceArray:
        return self

    def __exit__(self, *exc: object) -> None:
        self.free()

    def __repr__(self) -> str:
        return f"DeviceArray(shape={self.shape}, dtype=float16)"


def flash_params(depth: int, arch: str, q_len: int, kv_len: int) -> FlashParams:
    """Flash parameters for a general shape: the chess defaults for the depth at this key length
    (2 stages once there are several KV tiles), with warps sized for the query length.

    Measured on an H100 (d 64 / 128; L 8192 x 16 heads and L 1024 x 16 heads x batch 8; warps
    4/8 x KV tile 32/64 x stages 1/2/3 x occupancy 1/2): at d <= 64 with long queries 8 warps
    (128 query rows per block, K/V tiles shared by twice the rows) at 2 blocks/SM beat the
    4-warp default by 7-8 %; at d 128 the default (4 warps, 64-key tiles, 2 stages) was best.
    """
    # the one-shot grid: the persistent chess kernel (flash=v2) has no general entry
    p, _ = default_params(depth, arch, seq=max(kv_len, 16), persistent=0)
    if depth <= 64 and q_len >= 128 and kv_len > p.kv_tile:
        return replace(p, warps=8, min_blocks=2)
    return replace(p, warps=max(1, min(4, -(-q_len // 16))))


@dataclass(frozen=True)
class _Call:
    """One attention call as both implementations take it: the shape, the device operands
    (``o`` has ``q``'s shape and layout), the bias pointer ``g`` (0: none) with its batch and head
    strides in elements (0: broadcast), the causal flag and the scale of the scores."""

    shape: Shape
    q: DeviceArray
    k: DeviceArray
    v: DeviceArray
    o: DeviceArray
    layout: str
    g: int
    g_b: int
    g_h: int
    causal: bool
    scale: float


class GpuAttention:
    """Attention on one GPU (see the module docstring). Not thread-safe."""

    def __init__(
        self,
        platform: Platform | None = None,
        *,
        vendor: str = "auto",
        device: int = 0,
        flash_overrides: dict[str, int] | None = None,
    ) -> None:
        """``flash_overrides``: ``FlashParams`` fields replacing ``flash_params``' choice for every
        shape (experiments; the warps are still capped by the query length)."""
        self.flash_overrides = dict(flash_overrides or {})
        self.platform = platform if platform is not None else create_platform(vendor, device)
        self._own_platform = platform is None
        self.stream = self.platform.create_stream()
        self.cache = KernelCache(self.platform)
        self._sizes: dict[int, int] = {}
        self.current_bytes = 0
        self.peak_bytes = 0
        self._ws, self._ws_bytes = 0, 0
        self._flash_fns: dict[tuple[int, bool, FlashParams], tuple[int, FlashParams, int]] = {}
        self._softmax_fn: int | None = None

    # ---- memory ----------------------------------------------------------------------------------
    def alloc(self, nbytes: int) -> int:
        self.platform.bind_thread()  # another engine or backend may hold another device here
        ptr = self.platform.alloc(max(nbytes, 16))
        self._sizes[ptr] = nbytes
        self.current_bytes += nbytes
        self.peak_bytes = max(self.peak_bytes, self.current_bytes)
        return ptr

    def free(self, ptr: int) -> None:
        self.platform.bind_thread()
        self.platform.synchronize(self.stream)
        self.current_bytes -= self._sizes.pop(ptr)
        self.platform.free(ptr)

    def workspace(self, nbytes: int) -> int:
        """The naive path's scores buffer: kept between calls (grown when needed) so a timed call
        does not include an allocation; ``release_workspace`` frees it."""
        if self._ws_bytes < nbytes:
            self.release_workspace()
            self._ws = self.alloc(nbytes)
            self._ws_bytes = nbytes
        return self._ws

    def release_workspace(self) -> None:
        if self._ws:
            self.free(self._ws)
            self._ws, self._ws_bytes = 0, 0

    def reset_peak(self) -> None:
        self.peak_bytes = self.current_bytes

    def empty(self, shape: tuple[int, ...]) -> DeviceArray:
        return DeviceArray(self, self.alloc(int(np.prod(shape)) * 2), shape)

    def to_device(self, x: Any) -> DeviceArray:
        """Upload ``x`` as fp16 (synchronously: ``x`` may be a temporary)."""
        h = np.ascontiguousarray(np.asarray(x, dtype=np.float16))
        out = self.empty(h.shape)
        self.platform.bind_thread()
        self.platform.copy_h2d(out.ptr, h, h.nbytes, self.stream)
        self.platform.synchronize(self.stream)
        return out

    def synchronize(self) -> None:
        self.platform.bind_thread()
        self.platform.synchronize(self.stream)

    def close(self) -> None:
        if self.platform is None:
            return
        self.platform.bind_thread()
        self.platform.synchronize(self.stream)
        for ptr in list(self._sizes):
            self.platform.free(ptr)
        self._sizes.clear()
        self.platform.destroy_stream(self.stream)
        if self._own_platform:
            self.platform.close()
        self.platform = None  # type: ignore[assignment]

    # ---- the two implementations ---------------------------------------------------------------
    def attention(
        self,
        q: DeviceArray,
        k: DeviceArray,
        v: DeviceArray,
        *,
        impl: str = "flash",
        layout: str = "interleaved",
        heads: int | None = None,
        bias: DeviceArray | np.ndarray | None = None,
        causal: bool = False,
        mask: np.ndarray | None = None,
        scale: float | None = None,
        out: DeviceArray | None = None,
    ) -> DeviceArray:
        """Enqueue attention on the engine's stream; returns ``out`` (allocated if not given).

        ``bias``: a DeviceArray (fp16, natural-log units) or a host array; ``mask`` (host, bool,
        True = attend) is folded into the uploaded bias as 0 / -inf.
        """
        s = attention_shape(q.shape, k.shape, v.shape, layout, heads)
        scale = 1.0 / math.sqrt(s.depth) if scale is None else float(scale)
        tmp: list[DeviceArray] = []
        g, g_b, g_h = 0, 0, 0
        if isinstance(bias, DeviceArray) and mask is None:
            bb, hb = bias_shape(bias.shape, s, "bias")
            g = bias.ptr
        elif bias is not None or mask is not None:
            if isinstance(bias, DeviceArray):
                raise UsageError(
                    "a mask with a device bias: pass the bias as a host array (or fold the mask in)"
                )
            host = combined_bias(bias, mask, s)
            assert host is not None
            dev = self.to_device(host)
            tmp.append(dev)
            bb, hb = host.shape[0], host.shape[1]
            g = dev.ptr
        if g:
            g_b = hb * s.q_len * s.kv_len if bb > 1 else 0
            g_h = s.q_len * s.kv_len if hb > 1 else 0
        if out is None:
            out = self.empty(q.shape)
        elif out.shape != q.shape:
            raise UsageError(f"out has shape {out.shape}, want {q.shape}")
        call = _Call(s, q, k, v, out, layout, g, g_b, g_h, causal, scale)
        self.platform.bind_thread()
        try:
            if impl == "flash":
                self._flash(call)
            elif impl == "naive":
                self._naive(call)
            else:
                raise UsageError(f"impl '{impl}': unknown (available: flash, naive)")
        finally:
            for t in tmp:
                t.free()  # waits for the stream
        return out

    def _strides(self, s: Shape, layout: str) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        """((batch, head, row) strides of Q/O, of K/V) in elements."""
        d = s.depth
        if layout == "bhsd":
            return (s.heads * s.q_len * d, s.q_len * d, d), (s.kv_heads * s.kv_len * d, s.kv_len * d, d)
        return (s.q_len * s.heads * d, d, s.heads * d), (s.kv_len * s.kv_heads * d, d, s.kv_heads * d)

    def flash_function(
        self, depth: int, q_len: int, kv_len: int, causal: bool
    ) -> tuple[int, FlashParams, int]:
        """``(function, params, shared bytes)`` of the general flash kernel for this shape."""
        if depth not in DEPTHS:
            raise UsageError(f"flash attention: depth {depth} is not a multiple of 16 in [16, 256]")
        p = flash_params(depth, self.platform.info.arch, q_len, kv_len)
        if self.flash_overrides:
            p = replace(p, **self.flash_overrides)
            p = replace(p, warps=min(p.warps, max(1, -(-q_len // 16))), persistent=0)
        memo = (depth, causal, p)
        if memo in self._flash_fns:  # no source read / hashing on the per-call path
            return self._flash_fns[memo]
        scratch = self.platform.info.mma_scratch_elems
        defines = {
            **p.defines(depth, fp16=True, bias_f32=False, scratch_per_warp=scratch),
            "LC0_FA_GENERAL": 1,
            "LC0_FA_CAUSAL": int(causal),
        }
        fn = self.cache.function("flash_attention.hip", "attention_f16", defines)
        smem = p.shared_bytes(depth, True, False, scratch)
        self.platform.set_max_dynamic_shared(fn, smem)
        self._flash_fns[memo] = (fn, p, smem)
        return fn, p, smem

    def _flash(self, c: _Call) -> None:
        s = c.shape
        fn, p, smem = self.flash_function(s.depth, s.q_len, s.kv_len, c.causal)
        (qb, qh, qs), (kb, kh, ks) = self._strides(s, c.layout)
        grid, block = flash_grid(s.q_len, s.heads, s.batch, p, True, self.platform.info.warp_size)
        args: list[KernelArg] = [
            P(c.q.ptr),
            P(c.k.ptr),
            P(c.v.ptr),
            P(c.o.ptr),
            LL(qb),
            LL(qh),
            I(qs),
            LL(kb),
            LL(kh),
            I(ks),
            LL(qb),
            LL(qh),
            I(qs),
            P(c.g),
            LL(c.g_b),
            LL(c.g_h),
            I(s.q_len),
            I(s.kv_len),
            I(s.heads),
            I(s.group),
            F(c.scale),
        ]
        self.platform.launch(fn, grid, block, smem, self.stream, args)

    def _naive(self, c: _Call) -> None:
        s, pl, st, d = c.shape, self.platform, self.stream, c.shape.depth
        lq, lk, grp = s.q_len, s.kv_len, s.group
        scores = self.workspace(s.batch * s.heads * lq * lk * 2)
        if c.layout == "bhsd":
            # (b, kv head) flattened has uniform strides; one batched GEMM per group member
            calls = [
                (r * lq * d, 0, r * lq * lk, s.batch * s.kv_heads, grp * lq * d, lk * d, d, d)
                for r in range(grp)
            ]
        else:
            calls = [
                (
                    b * lq * s.heads * d + r * d,
                    b * lk * s.kv_heads * d,
                    (b * s.heads + r) * lq * lk,
                    s.kv_heads,
                    grp * d,
                    d,
                    s.heads * d,
                    s.kv_heads * d,
                )
                for b in range(s.batch)
                for r in range(grp)
            ]
        for qo, ko, so, n, sq, sk, ldq, ldk in calls:  # S = Q K^T * scale
            pl.gemm(
                st,
                lq,
                lk,
                d,
                c.q.ptr + 2 * qo,
                ldq,
                c.k.ptr + 2 * ko,
                ldk,
                scores + 2 * so,
                lk,
                dtype="fp16",
                trans_b=True,
                alpha=c.scale,
                batch=n,
                stride_a=sq,
                stride_b=sk,
                stride_c=grp * lq * lk,
            )
        if self._softmax_fn is None:
            self._softmax_fn = self.cache.function("softmax_bias.hip", "softmax_rows", {"LC0_FP16": 1})
        fn = self._softmax_fn
        threads = 256 if lk > 128 else 128
        pl.launch(
            fn,
            (s.batch * s.heads * lq, 1, 1),
            (threads, 1, 1),
            0,
            st,
            [P(scores), P(c.g), LL(c.g_b), LL(c.g_h), I(s.heads), I(lq), I(lk), I(int(c.causal)), F(1.0)],
        )
        for qo, ko, so, n, sq, sk, ldq, ldk in calls:  # O = P V (O has Q's layout)
            pl.gemm(
                st,
                lq,
                d,
                lk,
                scores + 2 * so,
                lk,
                c.v.ptr + 2 * ko,
                ldk,
                c.o.ptr + 2 * qo,
                ldq,
                dtype="fp16",
                batch=n,
                stride_a=grp * lq * lk,
                stride_b=sk,
                stride_c=sq,
            )
