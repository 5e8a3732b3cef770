"""The whole attention-body forward pass on the GPU, written once against ``Platform``.

``GpuNetwork(platform, network, fp16=...)`` uploads the packed weights once (``weights.py``),
compiles the kernels (``compile_cache.py``; cached on disk), and keeps activation buffers sized
for the largest batch seen (grown on demand). ``submit(batch)`` copies the compact planes
(uint64 masks + float values) to the device, runs the network on one stream -- replaying a
captured graph per batch-size bucket when ``graphs`` is on -- starts the copies of the outputs
back into pinned host memory, records an event and returns at once; ``PendingBatch.result()``
waits on that event.

Per encoder layer (fp16: every buffer fp16, fp32 accumulation in GEMMs/kernels, fp32 LN stats)::

    qkvc = x · [Wq;Wk;Wv;Wc]ᵀ                      one GEMM, N = 3D + hc (biases applied in attention)
    G    = smolgen(c)                              copy c out, dense1 GEMM + act/LN kernel,
                                                   dense2 GEMM + act/LN kernel, global GEMM -> [B,H,64,64]
    O    = flash(qkv, G)                           one kernel: QKᵀ·scale + G -> online softmax -> ·V
           (fallback: bias kernel, per-head batched GEMMs QKᵀ, softmax_bias kernel, GEMMs P·V)
    x   += α · O·Woᵀ                               GEMM with beta = 1 (residual in its epilogue)
    x1   = LN(x + α·bo)                            one kernel
    f    = act(x1 · W1ᵀ + b1)                      GEMM + bias/act kernel
    x1  += α · f·W2ᵀ                               GEMM with beta = 1
    x    = LN(x1 + α·b2)                           one kernel
"""

from __future__ import annotations

import ctypes
import logging
import math
import weakref
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from lc0py.backends.base import NetworkOutput, PlanesBatch
from lc0py.backends.gpu.compile_cache import KernelCache
from lc0py.backends.gpu.kernels import AttentionChoice, AttentionKernel, choose_attention, flash_grid
from lc0py.backends.gpu.platform import Event, HostBuffer, Platform
from lc0py.backends.gpu.weights import (
    LOG2E,
    PLANES,
    POLICY_OUT,
    SEQ,
    activation_code,
    graph_bucket,
    layout,
    net_shape,
    pack_weights,
    plan_buffers,
)
from lc0py.errors import Lc0pyError
from lc0py.weights.network import Activation, Network

log = logging.getLogger("lc0py.backends.gpu")

P, I, F, LL = ctypes.c_void_p, ctypes.c_int, ctypes.c_float, ctypes.c_longlong
ACT_NONE = int(Activation.NONE)
_fallback_logged: set[str] = set()


def log_once(message: str) -> None:
    """One log line per distinct message per process (fallback notices)."""
    if message not in _fallback_logged:
        _fallback_logged.add(message)
        log.warning(message)


def ln_config(n: int, vec: int, act: int | None = None, warp_size: int = 32) -> dict[str, int]:
    """Compile defines of ``residual_layernorm`` for rows of ``n``: each thread keeps <= 4
    16-byte chunks in registers (more threads per row rather than a long serial chain per
    thread: a 6144-wide row with 6 chunks/thread took 38 us at 64 rows), 256-thread blocks.
    Threads per row are a multiple of the warp (64 lanes on CDNA), as the kernel's row
    reduction requires."""
    chunks = n // vec if n % vec == 0 else n
    threads = warp_size
    while (chunks + threads - 1) // threads > 4 and threads < 1024:
        threads *= 2
    cfg = {"LC0_LN_N": n, "LC0_LN_THREADS": threads, "LC0_LN_ROWS": max(1, 256 // threads)}
    if act is not None:
        cfg["LC0_LN_ACT"] = act
    return cfg


class _PinnedPool:
    """Pinned host buffers for the policy output, handed to the caller without a copy.

    ``result()`` returns a numpy view of the pinned buffer the device copied into; the buffer
    goes back to the pool only when the last array viewing it is garbage collected (a
    ``weakref.finalize`` on the base array), so results can be kept (an NN cache) without ever
    being overwritten. Saves a 7.6 MB host copy per 1024-position batch (~1 ms of idle GPU).
    """

    def __init__(self, platform: Platform, nbytes: int) -> None:
        self.p = platform
        self.nbytes = nbytes
        self.free: list[HostBuffer] = []
        self.closed = False

    def take(self) -> HostBuffer:
        while self.free:
            buf = self.free.pop()
            if buf.nbytes == self.nbytes:
                return buf
            self.p.free_host(buf)
        return self.p.alloc_host(self.nbytes)

    def release(self, buf: HostBuffer) -> None:
        if self.closed or buf.nbytes != self.nbytes:
            self.p.free_host(buf)
        else:
            self.free.append(buf)

    def resize(self, nbytes: int) -> None:
        self.nbytes = nbytes

    def close(self) -> None:
        self.closed = True
        for buf in self.free:
            self.p.free_host(buf)
        self.free.clear()


@dataclass
class _Slot:
    """Pinned host buffers of one in-flight batch (two slots: submit overlaps a pending result)."""

    masks: HostBuffer
    values: HostBuffer
    value: HostBuffer
    mlh: HostBuffer
    event: Event
    pending: PendingBatch | None = None


class PendingBatch:
    """Handle returned by ``GpuNetwork.submit``; ``result()`` waits for the device."""

    def __init__(self, net: GpuNetwork, slot: _Slot, n: int, policy: HostBuffer) -> None:
        self._net, self._slot, self._n, self._policy = net, slot, n, policy
        self._out: NetworkOutput | None = None

    def done(self) -> bool:
        return self._out is not None or self._slot.event.query()

    def result(self) -> NetworkOutput:
        if self._out is None:
            self._slot.event.synchronize()
            self._out = self._net._read_outputs(self._slot, self._n, self._policy)
            self._policy = None  # now owned by the returned array
            self._slot.pending = None
        return self._out

    def __del__(self) -> None:
        if getattr(self, "_policy", None) is not None and self._out is None:
            try:  # never read: the device may still write into it, so wait first
                self._slot.event.synchronize()
                self._net._policy_pool.release(self._policy)
            except Exception:
                pass


class GpuNetwork:
    """One network on one GPU (see the module docstring)."""

    def __init__(
        self,
        platform: Platform,
        network: Network,
        *,
        fp16: bool = True,
        flash: bool = True,
        graphs: bool = True,
        max_batch: int = 256,
        flash_overrides: dict[str, int] | None = None,
    ) -> None:
        self.p = platform
        self.net = network
        self.shape = s = net_shape(network)
        self.fp16 = fp16
        self.dtype = "fp16" if fp16 else "fp32"
        self.np_dtype = np.float16 if fp16 else np.float32
        self.elem = 2 if fp16 else 4
        self.graphs_enabled = graphs
        self.max_batch = max(1, int(max_batch))
        self.stream = platform.create_stream()
        self._cur = self.stream  # the stream the helpers enqueue on (main or side branch)
        # Smolgen and the value/moves-left heads depend only on their input, so they run on a
        # second stream, forked and joined with events (graph branches when captured): their
        # small, latency-bound kernels overlap the big QKV / policy GEMMs.
        self.fork = platform.can_fork
        self.side = platform.create_stream() if self.fork else self.stream
        self._fork_events = (
            [platform.create_event() for _ in range(2 * (self.shape.L + 1))] if self.fork else []
        )
        self.cache = KernelCache(platform)
        self.acts = {
            "default": activation_code(network.default_act),
            "ffn": activation_code(network.ffn_act),
            "smolgen": activation_code(network.smolgen_act) if s.smolgen else ACT_NONE,
        }
        self.flash_choice: AttentionChoice = self._choose_flash(flash, flash_overrides)
        self._compile_kernels()
        self._upload_weights()
        self._buf: dict[str, int] = {}
        self._buf_base = 0
        self.capacity = 0
        self._graphs: dict[tuple[int, bool], int] = {}
        self._slots: list[_Slot] = []
        self._policy_pool: _PinnedPool | None = None
        self._next_slot = 0
        self._closed = False
        self._ensure(self.max_batch)

    # ---- setup ------------------------------------------------------------------------------
    def _fn(self, source: str, kernel: str, defines: dict[str, int]) -> int:
        return self.cache.function(source, kernel, {"LC0_FP16": int(self.fp16), **defines})

    def _compile_kernels(self) -> None:
        s = self.shape
        vec = 16 // self.elem
        self.k_expand = self._fn("elementwise.hip", "expand_planes", {})
        self.k_embed = self._fn("elementwise.hip", "embed_epilogue", {})
        self.k_bias_act = self._fn("elementwise.hip", "bias_act", {})
        self.k_copy_cols = self._fn("elementwise.hip", "copy_columns", {})
        self.k_gather = self._fn("policy_map.hip", "policy_gather", {})
        self.ln_cfg: dict[tuple[int, int], dict[str, int]] = {}
        self.k_ln: dict[tuple[int, int], int] = {}
        wanted = {(s.E, ACT_NONE)}
        if s.pe_dense:  # LN(act(x + b)) of the PE_DENSE embedding, one kernel
            wanted.add((s.E, self.acts["default"]))
        if s.smolgen:
            wanted |= {(s.hs, self.acts["smolgen"]), (s.H * s.gs, self.acts["smolgen"])}
        for n, act in wanted:
            cfg = ln_config(n, vec, act, self.p.info.warp_size)
            self.ln_cfg[(n, act)] = cfg
            self.k_ln[(n, act)] = self._fn("layernorm.hip", "residual_layernorm", cfg)
        self.k_softmax: int | None = None
        self._build_flash()

    def _choose_flash(self, flash: bool, overrides: dict[str, int] | None) -> AttentionChoice:
        scratch = 0 if self.p.vendor == "nvidia" else 256
        return choose_attention(
            depth=self.shape.depth,
            seq=SEQ,
            fp16=self.fp16,
            vendor=self.p.vendor,
            arch=self.p.info.arch,
            shared_optin=self.p.info.shared_mem_per_block_optin,
            flash=flash,
            overrides=overrides,
            scratch_per_warp=scratch,
        )

    def set_flash_overrides(self, overrides: dict[str, int]) -> AttentionChoice:
        """Rebuild the flash kernel with other run-time parameters (``FlashParams`` fields), keeping
        the weights and buffers: the tuner's inner loop costs one kernel compile, not a network
        upload. Captured graphs hold the old kernel, so they are dropped. Returns the new choice;
        if it is the fallback (invalid parameters, compile or shared-memory failure) its
        ``reason`` says why and the network runs the GEMM+softmax path."""
        self.p.synchronize(self.stream)
        self._drop_graphs()
        self.flash_choice = self._choose_flash(True, overrides)
        self._build_flash()
        return self.flash_choice

    def _build_flash(self) -> None:
        s = self.shape
        self.k_flash: int | None = None
        self.flash_smem = 0
        ch = self.flash_choice
        if ch.is_flash:
            assert ch.params is not None
            try:
                defines = ch.params.defines(s.depth, self.fp16, bias_f32=not self.fp16)
                self.k_flash = self.cache.function("flash_attention.hip", ch.kernel.value, defines)
                scratch = 0 if self.p.vendor == "nvidia" else 256
                self.flash_smem = ch.params.shared_bytes(s.depth, self.fp16, not self.fp16, scratch)
                self.p.set_max_dynamic_shared(self.k_flash, self.flash_smem)
            except Lc0pyError as exc:
                self.flash_choice = AttentionChoice(
                    AttentionKernel.FALLBACK, None, f"flash kernel failed to build: {exc}"
                )
                self.k_flash = None
        if not self.flash_choice.is_flash:
            log_once(f"attention: using GEMM+softmax fallback ({self.flash_choice.reason})")
            self._softmax_kernel()

    def _softmax_kernel(self) -> int:
        if self.k_softmax is None:
            warp = self.p.info.warp_size  # one warp per row: 64 lanes on CDNA, 32 elsewhere
            self.k_softmax = self._fn(
                "softmax_bias.hip", "softmax_bias", {"LC0_SM_PER": (SEQ + warp - 1) // warp}
            )
        return self.k_softmax

    def _upload_weights(self) -> None:
        packed = pack_weights(self.net, self.np_dtype)
        offsets, total = layout({k: a.nbytes for k, a in packed.items()})
        host = np.zeros(total, np.uint8)
        for k, a in packed.items():
            host[offsets[k] : offsets[k] + a.nbytes] = a.view(np.uint8).reshape(-1)
        self._w_base = self.p.alloc(total)
        self.p.copy_h2d(self._w_base, host, total, self.stream)
        self.p.synchronize(self.stream)
        self.w = {k: self._w_base + off for k, off in offsets.items()}
        self.weight_bytes = total

    def _ensure(self, batch: int) -> None:
        """Buffers for ``batch`` positions (grows by powers of two; drops captured graphs)."""
        if batch <= self.capacity:
            return
        cap = max(batch, self.max_batch)
        cap = 1 << (cap - 1).bit_length() if cap > self.max_batch else cap
        for slot in self._slots:
            if slot.pending is not None:
                slot.pending.result()
        self.p.synchronize(self.stream)
        self._drop_graphs()
        if self._buf_base:
            self.p.free(self._buf_base)
        for slot in self._slots:
            for hb in (slot.masks, slot.values, slot.value, slot.mlh):
                self.p.free_host(hb)
            self.p.destroy_event(slot.event)
        need_fallback = True  # scores buffer: fallback may be chosen per call (verify, flash failure)
        sizes = plan_buffers(self.shape, cap, self.elem, need_fallback)
        offsets, total = layout(sizes)
        self._buf_base = self.p.alloc(total)
        self._buf = {k: self._buf_base + off for k, off in offsets.items()}
        self.buffer_bytes = total
        s = self.shape
        self._slots = [
            _Slot(
                masks=self.p.alloc_host(cap * PLANES * 8),
                values=self.p.alloc_host(cap * PLANES * 4),
                value=self.p.alloc_host(cap * s.v_out * self.elem),
                mlh=self.p.alloc_host(cap * self.elem),
                event=self.p.create_event(),
            )
            for _ in range(2)
        ]
        if self._policy_pool is None:
            self._policy_pool = _PinnedPool(self.p, cap * POLICY_OUT * 4)
        self._policy_pool.resize(cap * POLICY_OUT * 4)
        self.capacity = cap

    def _drop_graphs(self) -> None:
        for g in self._graphs.values():
            self.p.destroy_graph(g)
        self._graphs.clear()

    # ---- primitives ---------------------------------------------------------------------------
    def _gemm(
        self, m: int, n: int, k: int, a: int, lda: int, b: int, ldb: int, c: int, ldc: int, **kw: object
    ) -> None:
        self.p.gemm(self._cur, m, n, k, a, lda, b, ldb, c, ldc, dtype=self.dtype, **kw)  # type: ignore[arg-type]

    def _dense(self, x: int, rows: int, n_in: int, w: str, n_out: int, out: int) -> None:
        """``out[rows, n_out] = x[rows, n_in] · W[n_out, n_in]ᵀ`` (no bias)."""
        self._gemm(rows, n_out, n_in, x, n_in, self.w[w], n_in, out, n_out, trans_b=True)

    def _bias_act(self, y: int, bias: str, rows: int, n: int, act: int) -> None:
        total = rows * n // (16 // self.elem if n % (16 // self.elem) == 0 else 1)
        blocks = max(1, min((total + 511) // 512, 65535))  # 2 chunks per thread (vector path)
        self.p.launch(
            self.k_bias_act,
            (blocks, 1, 1),
            (256, 1, 1),
            0,
            self._cur,
            [P(y), P(self.w[bias]), I(rows), I(n), I(act)],
        )

    def _layernorm(
        self,
        n: int,
        y: int,
        bias: int,
        skip: int,
        out: int,
        gamma: str,
        beta: str,
        rows: int,
        alpha: float,
        eps: float,
        act: int,
    ) -> None:
        cfg = self.ln_cfg[(n, act)]
        per_block = cfg["LC0_LN_ROWS"]
        blocks = (rows + per_block - 1) // per_block
        self.p.launch(
            self.k_ln[(n, act)],
            (blocks, 1, 1),
            (cfg["LC0_LN_THREADS"] * per_block, 1, 1),
            0,
            self._cur,
            [
                P(y),
                P(bias),
                P(skip),
                P(out),
                P(self.w[gamma]),
                P(self.w[beta]),
                I(rows),
                F(alpha),
                F(eps),
                I(act),
            ],
        )

    def _copy_columns(self, src: int, ld: int, col0: int, dst: int, rows: int, n: int) -> None:
        """``dst[r, :n] = src[r, col0:col0 + n]`` (row stride ``ld``), dst contiguous."""
        self.p.launch(
            self.k_copy_cols,
            (max(1, min((rows * n + 255) // 256, 65535)), 1, 1),
            (256, 1, 1),
            0,
            self._cur,
            [P(src), I(ld), I(col0), P(dst), I(rows), I(n)],
        )

    def _off(self, ptr: int, elems: int) -> int:
        return ptr + elems * self.elem

    # ---- the forward pass ---------------------------------------------------------------------
    def _attention(self, l: int, bsz: int, flash: bool) -> None:
        s, buf = self.shape, self._buf
        qkv, o = buf["qkv"], buf["attn"]
        g = buf["sg.g"] if s.smolgen else 0
        bias = self.w[f"L{l}.qkv.b"]
        scale = 1.0 / math.sqrt(s.depth)
        if flash and self.k_flash is not None:
            ch = self.flash_choice
            assert ch.params is not None
            grid, block = flash_grid(SEQ, s.H, bsz, ch.params, self.fp16, self.p.info.warp_size)
            self.p.launch(
                self.k_flash,
                grid,
                block,
                self.flash_smem,
                self._cur,
                [
                    P(qkv),
                    P(self._off(qkv, s.D)),
                    P(self._off(qkv, 2 * s.D)),
                    I(s.qkv_ld),
                    P(g),
                    P(bias),
                    P(self._off(bias, 2 * s.D)),
                    P(o),
                    I(s.D),
                    I(SEQ),
                    I(s.H),
                    F(scale),
                ],
            )
            return
        # Fallback: add all three biases, then per head: S = Q Kᵀ, softmax(S·scale + G), O = P V.
        sc = buf["scores"]
        self._bias_act(qkv, f"L{l}.qkv.b", bsz * SEQ, s.qkv_ld, ACT_NONE)  # zeros on compress cols
        ld = s.qkv_ld
        tok = SEQ * ld  # elements between positions
        hs = SEQ * SEQ
        for h in range(s.H):
            self._gemm(
                SEQ,
                SEQ,
                s.depth,
                self._off(qkv, h * s.depth),
                ld,
                self._off(qkv, s.D + h * s.depth),
                ld,
                self._off(sc, h * hs),
                SEQ,
                trans_b=True,
                batch=bsz,
                stride_a=tok,
                stride_b=tok,
                stride_c=s.H * hs,
            )
        rows = bsz * s.H * SEQ
        warps = 4
        self.p.launch(
            self._softmax_kernel(),
            ((rows + warps - 1) // warps, 1, 1),
            (self.p.info.warp_size * warps, 1, 1),
            0,
            self._cur,
            [P(sc), P(g), LL(rows), I(SEQ), F(scale * LOG2E)],
        )  # exp2 domain (G is pre-scaled)
        for h in range(s.H):
            self._gemm(
                SEQ,
                s.depth,
                SEQ,
                self._off(sc, h * hs),
                SEQ,
                self._off(qkv, 2 * s.D + h * s.depth),
                ld,
                self._off(o, h * s.depth),
                s.D,
                batch=bsz,
                stride_a=s.H * hs,
                stride_b=tok,
                stride_c=SEQ * s.D,
            )

    def _smolgen(self, l: int, bsz: int) -> None:
        s, buf, p = self.shape, self._buf, f"L{l}.sg."
        layer = self.net.encoders[l].smolgen
        assert layer is not None
        m = bsz * SEQ
        act = self.acts["smolgen"]
        # the compress columns of the fused projection -> contiguous [B, 64*hc] for dense1
        self.p.launch(
            self.k_copy_cols,
            (max(1, min((m * s.hc // (16 // self.elem) + 255) // 256, 65535)), 1, 1),
            (256, 1, 1),
            0,
            self._cur,
            [P(buf["qkv"]), I(s.qkv_ld), I(3 * s.D), P(buf["sg.c"]), I(m), I(s.hc)],
        )
        self._dense(buf["sg.c"], bsz, SEQ * s.hc, p + "d1.w", s.hs, buf["sg.s1"])
        self._layernorm(
            s.hs,
            buf["sg.s1"],
            self.w[p + "d1.b"],
            0,
            buf["sg.s1"],
            p + "ln1.g",
            p + "ln1.b",
            bsz,
            1.0,
            layer.ln1.eps,
            act,
        )
        self._dense(buf["sg.s1"], bsz, s.hs, p + "d2.w", s.H * s.gs, buf["sg.s2"])
        self._layernorm(
            s.H * s.gs,
            buf["sg.s2"],
            self.w[p + "d2.b"],
            0,
            buf["sg.s2"],
            p + "ln2.g",
            p + "ln2.b",
            bsz,
            1.0,
            layer.ln2.eps,
            act,
        )
        self._dense(buf["sg.s2"], bsz * s.H, s.gs, "smolgen_w", SEQ * SEQ, buf["sg.g"])

    def _branch(self, k: int, work: Callable[[], None]) -> None:
        """Enqueue ``work`` on the side stream after everything already on the main stream."""
        if not self.fork:
            work()
            return
        ev = self._fork_events[k]
        self.p.event_record(ev.handle, self.stream)
        self.p.stream_wait_event(self.side, ev.handle)
        self._cur = self.side
        try:
            work()
        finally:
            self._cur = self.stream

    def _join(self, k: int) -> None:
        """Main stream waits for the side-stream work enqueued by ``_branch``."""
        if self.fork:
            ev = self._fork_events[k + 1]
            self.p.event_record(ev.handle, self.side)
            self.p.stream_wait_event(self.stream, ev.handle)

    def _encoder(self, l: int, bsz: int, flash: bool, tap: Callable[[str, int, int], None] | None) -> None:
        s, buf, p = self.shape, self._buf, f"L{l}."
        layer = self.net.encoders[l]
        m = bsz * SEQ
        alpha = float(self.net.alpha)
        self._dense(buf["x"], m, s.E, p + "qkv.w", s.qkv_ld, buf["qkv"])
        if s.smolgen:
            self._smolgen(l, bsz)
        self._attention(l, bsz, flash)
        if tap is not None:
            tap(f"encoder{l}.attention", buf["attn"], s.D)
        # Residual inside the GEMM: x += alpha * O·Woᵀ (beta = 1, C = x in place), so the
        # LayerNorm reads one tensor instead of two; the C read rides in the compute-bound
        # GEMM's epilogue. The bias enters the LN pre-scaled (alpha * bo).
        self._gemm(
            m,
            s.E,
            s.D,
            buf["attn"],
            s.D,
            self.w[p + "out.w"],
            s.D,
            buf["x"],
            s.E,
            trans_b=True,
            alpha=alpha,
            beta=1.0,
        )
        self._layernorm(
            s.E,
            buf["x"],
            self.w[p + "out.b.alpha"],
            0,
            buf["x1"],
            p + "ln1.g",
            p + "ln1.b",
            m,
            1.0,
            layer.ln1.eps,
            ACT_NONE,
        )
        self._dense(buf["x1"], m, s.E, p + "ffn1.w", s.Fd, buf["ffn"])
        self._bias_act(buf["ffn"], p + "ffn1.b", m, s.Fd, self.acts["ffn"])
        self._gemm(
            m,
            s.E,
            s.Fd,
            buf["ffn"],
            s.Fd,
            self.w[p + "ffn2.w"],
            s.Fd,
            buf["x1"],
            s.E,
            trans_b=True,
            alpha=alpha,
            beta=1.0,
        )  # x1 += alpha * f·W2ᵀ
        self._layernorm(
            s.E,
            buf["x1"],
            self.w[p + "ffn2.b.alpha"],
            0,
            buf["x"],
            p + "ln2.g",
            p + "ln2.b",
            m,
            1.0,
            layer.ln2.eps,
            ACT_NONE,
        )

    def _heads(self, bsz: int) -> None:
        s, buf = self.shape, self._buf
        m = bsz * SEQ
        act = self.acts["default"]
        self._branch(2 * s.L, lambda: self._value_heads(bsz))
        # policy
        self._dense(buf["x"], m, s.E, "pol.emb.w", s.Pe, buf["ffn"])
        self._bias_act(buf["ffn"], "pol.emb.b", m, s.Pe, act)
        self._dense(buf["ffn"], m, s.Pe, "pol.qk.w", 2 * s.Pd, buf["pol.qk"])
        self._bias_act(buf["pol.qk"], "pol.qk.b", m, 2 * s.Pd, ACT_NONE)
        ld = 2 * s.Pd
        self._gemm(
            SEQ,
            SEQ,
            s.Pd,
            buf["pol.qk"],
            ld,
            self._off(buf["pol.qk"], s.Pd),
            ld,
            buf["pol.lg"],
            SEQ,
            trans_b=True,
            alpha=1.0 / math.sqrt(s.Pd),
            batch=bsz,
            stride_a=SEQ * ld,
            stride_b=SEQ * ld,
            stride_c=SEQ * SEQ,
        )
        self.p.launch(
            self.k_gather,
            (bsz, 1, 1),
            (256, 1, 1),
            0,
            self._cur,
            [
                P(buf["pol.lg"]),
                P(self._off(buf["pol.qk"], s.Pd)),
                I(ld),
                P(self.w["pol.promo"]),
                I(s.Pd),
                P(self.w["gather"]),
                I(POLICY_OUT),
                P(buf["out.policy"]),
            ],
        )
        self._join(2 * s.L)

    def _value_heads(self, bsz: int) -> None:
        s, buf = self.shape, self._buf
        m = bsz * SEQ
        act = self.acts["default"]
        # value
        self._dense(buf["x"], m, s.E, "val.emb.w", s.Vc, buf["val.v1"])
        self._bias_act(buf["val.v1"], "val.emb.b", m, s.Vc, act)
        self._dense(buf["val.v1"], bsz, SEQ * s.Vc, "val.fc1.w", s.Vh, buf["val.v2"])
        self._bias_act(buf["val.v2"], "val.fc1.b", bsz, s.Vh, act)
        self._dense(buf["val.v2"], bsz, s.Vh, "val.fc2.w", s.v_out, buf["out.value"])
        self._bias_act(buf["out.value"], "val.fc2.b", bsz, s.v_out, ACT_NONE)
        # moves left (final ReLU on the host, skipped without ip2_mov_b as blas does)
        if s.mlh:
            self._dense(buf["x"], m, s.E, "mlh.emb.w", s.Mc, buf["mlh.m1"])
            self._bias_act(buf["mlh.m1"], "mlh.emb.b", m, s.Mc, act)
            self._dense(buf["mlh.m1"], bsz, SEQ * s.Mc, "mlh.fc1.w", s.Mh, buf["mlh.m2"])
            self._bias_act(buf["mlh.m2"], "mlh.fc1.b", bsz, s.Mh, act)
            self._dense(buf["mlh.m2"], bsz, s.Mh, "mlh.fc2.w", 1, buf["out.mlh"])
            self._bias_act(buf["out.mlh"], "mlh.fc2.b", bsz, 1, ACT_NONE)

    def _body(self, bsz: int, flash: bool, tap: Callable[[str, int, int], None] | None = None) -> None:
        """Everything from the uploaded masks/values to the output buffers, on ``self.stream``."""
        s, buf = self.shape, self._buf
        m = bsz * SEQ
        self.p.launch(
            self.k_expand,
            (bsz, 1, 1),
            (256, 1, 1),
            0,
            self._cur,
            [P(buf["in.masks"]), P(buf["in.values"]), P(buf["tokens"]), I(PLANES)],
        )
        if s.pe_dense:
            self._embed_pe_dense(bsz)
        else:
            self._gemm(
                m, s.E, PLANES, buf["tokens"], PLANES, self.w["emb.w"], PLANES, buf["x"], s.E, trans_b=True
            )
            self._embed_epilogue(buf["x"], "emb.sqbias", m, self.acts["default"], gate=True)
        if tap is not None:
            tap("embedding", buf["x"], s.E)
        for l in range(s.L):
            self._encoder(l, bsz, flash, tap)
        self._heads(bsz)

    def _embed_epilogue(self, y: int, sqbias: str, m: int, act: int, gate: bool) -> None:
        """``y = act(y + sqbias[s]) * mult[s] + add[s]`` in place (gates only if ``gate``)."""
        s = self.shape
        total = m * s.E // (16 // self.elem)
        mult = self.w["emb.mult"] if s.gating and gate else 0
        add = self.w["emb.add"] if s.gating and gate else 0
        self.p.launch(
            self.k_embed,
            (max(1, min((total + 255) // 256, 65535)), 1, 1),
            (256, 1, 1),
            0,
            self._cur,
            [P(y), P(self.w[sqbias]), P(mult), P(add), I(m), I(s.E), I(act)],
        )

    def _embed_pe_dense(self, bsz: int) -> None:
        """PE_DENSE embedding (docs/attention-body.md §3.2, §3.4-§3.5) from ``tokens`` into ``x``::

        P  = tokens[:, 0:12] as [B, 768]            copy kernel (square-major, s*12 + p)
        U  = P·Wpreᵀ + bpre -> [B*64, dE]           GEMM + bias kernel
        h  = tokens·Wᵀ[:, :112];  h += U·Wᵀ[:, 112:] two GEMMs (second with beta = 1)
        h  = LN(act(h + b)) (eps from the net)      one kernel
        h  = h * mult + add                         epilogue kernel (zero bias, no act)
        h += α · act(h·W1ᵀ + b1)·W2ᵀ;  x = LN(h + α·b2)   as an encoder FFN
        """
        s, buf = self.shape, self._buf
        emb = self.net.embedding
        assert emb.ln is not None
        m = bsz * SEQ
        alpha = float(self.net.alpha)
        self._copy_columns(buf["tokens"], PLANES, 0, buf["emb.p"], m, 12)
        self._dense(buf["emb.p"], bsz, SEQ * 12, "emb.pre.w", SEQ * s.dE, buf["emb.u"])
        self._bias_act(buf["emb.u"], "emb.pre.b", bsz, SEQ * s.dE, ACT_NONE)
        h = buf["x1"] if s.Fe else buf["x"]
        self._dense(buf["tokens"], m, PLANES, "emb.w", s.E, h)
        self._gemm(m, s.E, s.dE, buf["emb.u"], s.dE, self.w["emb.wu"], s.dE, h, s.E, trans_b=True, beta=1.0)
        act = self.acts["default"]
        self._layernorm(s.E, h, self.w["emb.b"], 0, h, "emb.ln.g", "emb.ln.b", m, 1.0, emb.ln.eps, act)
        if s.gating:
            self._embed_epilogue(h, "emb.zero", m, ACT_NONE, gate=True)
        if not s.Fe:
            return
        assert emb.ffn_ln is not None
        self._dense(h, m, s.E, "emb.ffn1.w", s.Fe, buf["ffn"])
        self._bias_act(buf["ffn"], "emb.ffn1.b", m, s.Fe, self.acts["ffn"])
        self._gemm(
            m,
            s.E,
            s.Fe,
            buf["ffn"],
            s.Fe,
            self.w["emb.ffn2.w"],
            s.Fe,
            h,
            s.E,
            trans_b=True,
            alpha=alpha,
            beta=1.0,
        )  # h += alpha * f·W2ᵀ
        self._layernorm(
            s.E,
            h,
            self.w["emb.ffn2.b.alpha"],
            0,
            buf["x"],
            "emb.ffn_ln.g",
            "emb.ffn_ln.b",
            m,
            1.0,
            emb.ffn_ln.eps,
            ACT_NONE,
        )

    # ---- submit / results ---------------------------------------------------------------------
    @property
    def uses_flash(self) -> bool:
        return self.k_flash is not None

    def submit(
        self, batch: PlanesBatch, *, flash: bool | None = None, use_graph: bool | None = None
    ) -> PendingBatch:
        """Start evaluating ``batch``; returns before the device finishes."""
        n = len(batch)
        if n == 0:
            raise ValueError("empty batch")
        flash = self.uses_flash if flash is None else (flash and self.uses_flash)
        use_graph = self.graphs_enabled if use_graph is None else use_graph
        run = graph_bucket(n) if use_graph else n
        self._ensure(run)
        slot = self._slots[self._next_slot]
        self._next_slot = (self._next_slot + 1) % len(self._slots)
        if slot.pending is not None:
            slot.pending.result()  # its outputs are still in this slot's pinned buffers
        masks = slot.masks.view(np.uint64, (run, PLANES))
        values = slot.values.view(np.float32, (run, PLANES))
        masks[:n] = batch.masks
        values[:n] = batch.values
        if run > n:
            masks[n:] = 0
            values[n:] = 0
        buf = self._buf
        self.p.copy_h2d(buf["in.masks"], slot.masks, run * PLANES * 8, self.stream)
        self.p.copy_h2d(buf["in.values"], slot.values, run * PLANES * 4, self.stream)
        if use_graph:
            key = (run, flash)
            graph = self._graphs.get(key)
            if graph is None:
                # One eager run first: cuBLAS picks and loads its kernels for these shapes and
                # creates its handle outside the capture (neither is allowed inside one).
                self._body(run, flash)
                self.p.begin_capture(self.stream)
                try:
                    self._body(run, flash)
                finally:
                    graph = self.p.end_capture(self.stream)
                self._graphs[key] = graph
            self.p.launch_graph(graph, self.stream)
        else:
            self._body(run, flash)
        assert self._policy_pool is not None
        policy = self._policy_pool.take()
        self._copy_outputs(slot, n, policy)
        slot.event.record(self.stream)
        pending = PendingBatch(self, slot, n, policy)
        slot.pending = pending
        return pending

    def _copy_outputs(self, slot: _Slot, n: int, policy: HostBuffer) -> None:
        s, buf = self.shape, self._buf
        self.p.copy_d2h(policy, buf["out.policy"], n * POLICY_OUT * 4, self.stream)
        self.p.copy_d2h(slot.value, buf["out.value"], n * s.v_out * self.elem, self.stream)
        if s.mlh:
            self.p.copy_d2h(slot.mlh, buf["out.mlh"], n * self.elem, self.stream)

    def _read_outputs(self, slot: _Slot, n: int, policy_buf: HostBuffer) -> NetworkOutput:
        s = self.shape
        # A fresh ctypes object per result owns the view: numpy keeps it alive through every
        # slice of the array (view bases stop at non-array owners), so the buffer returns to the
        # pool only when nothing can read it any more.
        owner = (ctypes.c_float * (n * POLICY_OUT)).from_address(policy_buf.ptr)
        pool = self._policy_pool
        assert pool is not None
        weakref.finalize(owner, pool.release, policy_buf)
        policy = np.ctypeslib.as_array(owner).reshape(n, POLICY_OUT)
        z = slot.value.view(self.np_dtype, (n, s.v_out)).astype(np.float32)
        if s.v_out == 3:
            e = np.exp(z - z.max(axis=1, keepdims=True))
            wdl = e / e.sum(axis=1, keepdims=True)
        else:
            q = np.tanh(z[:, 0])
            wdl = np.stack([(1 + q) / 2, np.zeros_like(q), (1 - q) / 2], axis=1)
        if s.mlh:
            mlh = slot.mlh.view(self.np_dtype, (n,)).astype(np.float32)
            ml = self.net.moves_left
            if ml is not None and ml.fc2.b is not None:
                mlh = np.maximum(mlh, 0)
        else:
            mlh = np.zeros(n, np.float32)
        return NetworkOutput(policy=policy, wdl=wdl.astype(np.float32), moves_left=mlh)

    def evaluate(self, batch: PlanesBatch, **kw: bool) -> NetworkOutput:
        return self.submit(batch, **kw).result()

    def evaluate_traced(
        self, batch: PlanesBatch, *, flash: bool
    ) -> tuple[NetworkOutput, dict[str, np.ndarray]]:
        """Outputs plus per-layer intermediates (``embedding``, ``encoder{l}.attention`` as float32
        ``[B, 64, width]``), for ``lc0py verify``; no graphs, synchronises after each tap."""
        n = len(batch)
        self._ensure(n)
        slot = self._slots[self._next_slot]
        if slot.pending is not None:
            slot.pending.result()
        slot.masks.view(np.uint64, (n, PLANES))[:] = batch.masks
        slot.values.view(np.float32, (n, PLANES))[:] = batch.values
        self.p.copy_h2d(self._buf["in.masks"], slot.masks, n * PLANES * 8, self.stream)
        self.p.copy_h2d(self._buf["in.values"], slot.values, n * PLANES * 4, self.stream)
        taps: dict[str, np.ndarray] = {}

        def tap(name: str, ptr: int, width: int) -> None:
            host = np.empty((n, SEQ, width), self.np_dtype)
            self.p.copy_d2h(host, ptr, host.nbytes, self.stream)
            self.p.synchronize(self.stream)
            taps[name] = host.astype(np.float32)

        self._body(n, flash and self.uses_flash, tap)
        assert self._policy_pool is not None
        policy = self._policy_pool.take()
        self._copy_outputs(slot, n, policy)
        self.p.synchronize(self.stream)
        return self._read_outputs(slot, n, policy), taps

    # ---- timing helpers (benchmarks) ------------------------------------------------------------
    def time_attention(self, bsz: int, flash: bool, iters: int = 50) -> float:
        """Median milliseconds of one layer's attention (flash kernel vs fallback GEMMs+softmax) on
        the current buffers (run a batch first so they hold real activations)."""
        self._ensure(bsz)
        start, end = self.p.create_event(timing=True), self.p.create_event(timing=True)
        times = []
        try:
            for i in range(iters + 5):
                start.record(self.stream)
                self._attention(0, bsz, flash and self.uses_flash)
                end.record(self.stream)
                end.synchronize()
                if i >= 5:
                    times.append(start.elapsed_ms(end))
        finally:
            self.p.destroy_event(start)
            self.p.destroy_event(end)
        return float(np.median(times))

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self.p.synchronize(self.stream)
        finally:
            self._drop_graphs()
            for slot in self._slots:
                for hb in (slot.masks, slot.values, slot.value, slot.mlh):
                    self.p.free_host(hb)
                self.p.destroy_event(slot.event)
            self._slots = []
            if self._policy_pool is not None:
                self._policy_pool.close()  # buffers still viewed by results are freed on release
            if self._buf_base:
                self.p.free(self._buf_base)
                self._buf_base = 0
            if self._w_base:
                self.p.free(self._w_base)
                self._w_base = 0
            for ev in self._fork_events:
                self.p.destroy_event(ev)
            if self.side != self.stream:
                self.p.destroy_stream(self.side)
            self.p.destroy_stream(self.stream)
