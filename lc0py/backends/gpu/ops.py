"""The primitive launches the GPU layers are written in: GEMMs, bias + activation, LayerNorm, copies.

``GpuOps`` owns the compiled element-wise kernels and the stream every primitive is enqueued on.
Layers (``layers.py``) call these with device pointers from their weight records and the
``Buffers`` arena; nothing here knows what a layer is. The stream is the main one except inside
``branch``: the value / moves-left heads and nothing else run on a second stream, forked and joined
with events (graph branches when captured), so their small latency-bound kernels overlap the big
policy GEMMs.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

from lc0py.backends.gpu.residual_kernels import (
    FUSED_WINOGRAD_MAX_C,
    SPLIT_FUSED_MAX_THREADS,
    FusedStep,
    fused_positions_per_block,
    split_fused_smem,
    split_staged_grid,
    split_staged_smem,
)
from lc0py.backends.gpu.weights import (
    COMPRESS_ROWS_MAX,
    DENSE_ROWS_MAX,
    PLANES,
    POLICY_OUT,
    SMOLGEN_CHAIN_MAX,
)
from lc0py.gpu.compile_cache import KernelCache
from lc0py.gpu.platform import Event, KernelArg, Platform

P, I, F, LL = ctypes.c_void_p, ctypes.c_int, ctypes.c_float, ctypes.c_longlong

SE_GATES_POSITIONS = 8  # kernels/residual.hip LC0_SE_GATES_POS: positions a se_gates block takes
SE_GATES_K_CHUNK = 16  # kernels/residual.hip LC0_SE_GATES_KC: weights a se_gates thread loads at once
SE_GATES_THREADS = 128  # outputs a se_gates block takes (one a thread)
PIPE_EVENTS = 10  # events of the cross-stream pipeline (``mark`` / ``after``): layers.RowHalves uses 10
THREADS = 256  # threads a block of the element-wise kernels (bias, copies, gathers, Winograd, im2col)
#: Blocks a position of ``expand_planes`` (8 squares each): a block a position was 28 dependent
#: rounds a thread, ~5 us at batch 1 on an H200.
EXPAND_PARTS = 8
#: Blocks a position of ``policy_gather`` when the batch is small: one output a thread
#: (``ceil(1858 / THREADS)``) instead of 7 dependent rounds (~15 us at batches 1-32 on an H200).
POLICY_PARTS = 8
#: From this many blocks the batch alone fills the device: ``policy_gather`` takes fewer parts,
#: since each block reads the promotion weights and keys again (18 KB a position for T82).
POLICY_BLOCKS = 512
MAX_BLOCKS = 65535  # grid cap of those kernels: each loops over what its blocks do not cover


def policy_gather_parts(bsz: int) -> int:
    """Blocks a position of ``policy_gather`` and ``gather_bias`` (residual nets' policy):
    ``POLICY_PARTS`` at small batches, fewer as the batch fills ``POLICY_BLOCKS`` blocks (one from
    512 positions)."""
    return max(1, min(POLICY_PARTS, POLICY_BLOCKS // max(1, bsz)))


def blocks_for(items: int, per_block: int = THREADS) -> int:
    """Blocks of a 1-D grid taking ``per_block`` of ``items`` work items each (1 to MAX_BLOCKS)."""
    return max(1, min((items + per_block - 1) // per_block, MAX_BLOCKS))


#: Rows a thread of ``bias_act`` / ``embed_epilogue`` loads before it stores any (compiled into
#: kernels/elementwise.hip as ``LC0_ROWS_UNROLL``).
ROWS_GRID_UNROLL = 2


def rows_grid(
    rows: int, n: int, vec: int, warp_size: int = 32
) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Grid and block of ``bias_act`` and ``embed_epilogue`` on ``rows`` rows of ``n``. Rows of
    whole ``vec``-element chunks: ``threadIdx.x`` walks a row's chunks (whole warps; a row of fewer
    chunks than a warp gets the next power of two, so a warp spans rows and still reads contiguous
    bytes) and ``threadIdx.y`` the rows, each thread ``ROWS_GRID_UNROLL`` rows a step. Other
    widths: a 1-D grid over the elements."""
    if n % vec:
        return (blocks_for(rows * n), 1, 1), (THREADS, 1, 1)
    chunks = n // vec
    if chunks < warp_size:
        tx = 1 << (chunks - 1).bit_length()
    else:
        tx = min(THREADS, -(-chunks // warp_size) * warp_size)
    ty = max(1, THREADS // tx)
    gy = max(1, min(-(-rows // (ty * ROWS_GRID_UNROLL)), MAX_BLOCKS))
    return (-(-chunks // tx), gy, 1), (tx, ty, 1)


def ln_config(n: int, vec: int, act: int | None = None, warp_size: int = 32) -> dict[str, int]:
    """Compile defines of ``residual_layernorm`` for rows of ``n``: each thread keeps <= 4
    16-byte chunks in registers (more threads per row rather than a long serial chain per
    thread: a 6144-wide row with 6 chunks/thread took 38 us at 64 rows). Blocks of 128 threads
    on 32-lane warps (T82's 768-wide rows alone, H200: 4 rows a block 52.3 us against 8 rows'
    56.3 us at 65,536 rows), 256 on 64-lane ones (not measured: no AMD card here). Threads per
    row are a multiple of the warp (64 lanes on CDNA), as the kernel's row reduction requires."""
    chunks = n // vec if n % vec == 0 else n
    threads = warp_size
    while (chunks + threads - 1) // threads > 4 and threads < 1024:
        threads *= 2
    block = 128 if warp_size == 32 else 256
    cfg = {"LC0_LN_N": n, "LC0_LN_THREADS": threads, "LC0_LN_ROWS": max(1, block // threads)}
    if act is not None:
        cfg["LC0_LN_ACT"] = act
    return cfg


DENSE_ROWS_WARPS = 8  # warps a block of dense_rows_layernorm (one output each at a time)


def dense_rows_config(n: int, k: int, act: int | None = None, warp_size: int = 32) -> dict[str, int]:
    """Compile defines of ``dense_rows_layernorm`` (kernels/dense_rows.hip) for ``n`` outputs of ``k``
    inputs: a warp an output, each warp taking enough outputs for ~128 warps' worth of blocks (T82's
    2048 -> 256: 32 blocks of one output a warp; 256 -> 6144: 128 blocks of 6)."""
    per_warp = max(1, min(8, -(-n // (DENSE_ROWS_WARPS * 128))))
    cfg = {
        "LC0_DR_N": n,
        "LC0_DR_K": k,
        "LC0_DR_ROWS": DENSE_ROWS_MAX,
        "LC0_DR_WARPS": DENSE_ROWS_WARPS,
        "LC0_DR_OUT": per_warp,
    }
    if act is not None:
        cfg["LC0_DR_ACT"] = act
    return cfg


def dense_rows_grid(cfg: dict[str, int]) -> int:
    """Blocks of a ``dense_rows_layernorm`` launch of ``cfg``."""
    per_block = cfg["LC0_DR_WARPS"] * cfg["LC0_DR_OUT"]
    return -(-cfg["LC0_DR_N"] // per_block)


COMPRESS_ROWS_WARPS = 8  # warps a block of compress_rows_layernorm


def compress_rows_config(seq: int, e: int, hc: int, n: int, act: int | None = None) -> dict[str, int]:
    """Compile defines of ``compress_rows_layernorm`` (kernels/compress_rows.hip): smolgen's
    compress (``e`` -> ``hc`` a token, ``seq`` tokens) and first dense layer (``seq·hc`` -> ``n``)
    with its LayerNorm, for up to ``COMPRESS_ROWS_MAX`` positions; a block a token of a position."""
    cfg = {
        "LC0_CR_SEQ": seq,
        "LC0_CR_E": e,
        "LC0_CR_HC": hc,
        "LC0_CR_N": n,
        "LC0_CR_ROWS": COMPRESS_ROWS_MAX,
        "LC0_CR_WARPS": COMPRESS_ROWS_WARPS,
    }
    if act is not None:
        cfg["LC0_CR_ACT"] = act
    return cfg


SMOLGEN_CHAIN_WARPS = 8  # warps a block of smolgen_chain


def smolgen_chain_config(seq: int, e: int, hc: int, hs: int, n2: int) -> dict[str, int]:
    """Compile defines of ``smolgen_chain`` (kernels/smolgen_chain.hip): smolgen's compress, dense
    1 + LN and dense 2 + LN for up to ``SMOLGEN_CHAIN_MAX`` positions in one kernel."""
    return {
        "LC0_SC_SEQ": seq,
        "LC0_SC_E": e,
        "LC0_SC_HC": hc,
        "LC0_SC_HS": hs,
        "LC0_SC_N2": n2,
        "LC0_SC_ROWS": SMOLGEN_CHAIN_MAX,
        "LC0_SC_WARPS": SMOLGEN_CHAIN_WARPS,
    }


def smolgen_chain_shared_bytes(cfg: dict[str, int]) -> int:
    """The kernel's dynamic shared memory (``sc::SMEM_BYTES``): the rows a step reads, the
    reduction slots, the per-row statistics."""
    k1 = cfg["LC0_SC_SEQ"] * cfg["LC0_SC_HC"]
    stage = cfg["LC0_SC_ROWS"] * max(k1, cfg["LC0_SC_HS"])
    return (stage + cfg["LC0_SC_WARPS"] + 2 * cfg["LC0_SC_ROWS"]) * 4


def smolgen_chain_blocks(sm_count: int) -> int:
    """Blocks of a ``smolgen_chain`` launch: they wait for each other at grid barriers, so all must
    be resident at once. A quarter of the multiprocessors (at most 32) keeps that true with
    several chains at once (lanes on one GPU) and the GEMM beside them, and is enough to keep
    the weight loads of every step in flight (T82: 6 MB a layer)."""
    return max(1, min(32, sm_count // 4))


class GpuOps:
    """Primitive launches in one precision (``fp16``: fp16 storage, fp32 accumulation)."""

    def __init__(self, platform: Platform, cache: KernelCache, fp16: bool, side_branches: int) -> None:
        self.p = platform
        self.cache = cache
        self.fp16 = fp16
        self.dtype = "fp16" if fp16 else "fp32"
        self.elem = 2 if fp16 else 4
        self.vec = 16 // self.elem  # elements per 16-byte vector
        self.main = platform.create_stream()
        self.stream = self.main  # where primitives are enqueued now (main, or side inside branch)
        self.fork = platform.can_fork
        self.side = platform.create_stream() if self.fork else self.main
        self._events: list[Event] = (
            [platform.create_event() for _ in range(2 * side_branches)] if self.fork else []
        )
        self._pipe: list[Event] = [platform.create_event() for _ in range(PIPE_EVENTS)] if self.fork else []
        rows_unroll = {"LC0_ROWS_UNROLL": ROWS_GRID_UNROLL}  # one module: rows_grid's step is the kernels'
        self.k_expand = self.function("elementwise.hip", "expand_planes", rows_unroll)
        self.k_embed = self.function("elementwise.hip", "embed_epilogue", rows_unroll)
        self.k_bias_act = self.function("elementwise.hip", "bias_act", rows_unroll)
        self.k_copy_cols = self.function("elementwise.hip", "copy_columns", rows_unroll)
        self.k_gather = self.function("policy_map.hip", "policy_gather", {})
        self._ln: dict[tuple[int, int], tuple[int, dict[str, int]]] = {}
        self._dense_rows: dict[tuple[int, int, int], tuple[int, dict[str, int]]] = {}
        self._compress_rows: dict[tuple[int, int, int, int, int], tuple[int, dict[str, int]]] = {}
        #: the same modules' ``compress_rows_prenorm`` entries (``smolgen_early``)
        self._compress_prenorm: dict[tuple[int, int, int, int, int], tuple[int, dict[str, int]]] = {}
        self._smolgen_chain: dict[tuple[int, int, int, int, int], tuple[int, dict[str, int]]] = {}
        self._softmax: int | None = None

    def function(self, source: str, kernel: str, defines: dict[str, int]) -> int:
        """A compiled kernel of this precision (``LC0_FP16`` set), from the on-disk cache."""
        return self.cache.function(source, kernel, {"LC0_FP16": int(self.fp16), **defines})

    def off(self, ptr: int, elems: int) -> int:
        """``ptr`` advanced by ``elems`` elements of this precision."""
        return ptr + elems * self.elem

    # ---- streams ------------------------------------------------------------------------------
    def branch(self, k: int, work: Callable[[], None]) -> None:
        """Enqueue ``work`` on the side stream after everything already on the main stream."""
        if not self.fork:
            work()
            return
        ev = self._events[2 * k]
        self.p.event_record(ev.handle, self.main)
        self.p.stream_wait_event(self.side, ev.handle)
        self.stream = self.side
        try:
            work()
        finally:
            self.stream = self.main

    def join(self, k: int) -> None:
        """The main stream waits for the side-stream work of ``branch(k, ...)``."""
        if self.fork:
            ev = self._events[2 * k + 1]
            self.p.event_record(ev.handle, self.side)
            self.p.stream_wait_event(self.main, ev.handle)

    def use(self, side: bool) -> None:
        """Enqueue what follows on the side stream (``side``) or the main one; without a side
        stream everything stays on the main one, in the order it is enqueued."""
        self.stream = self.side if side and self.fork else self.main

    def mark(self, k: int) -> None:
        """Record pipeline event ``k`` (< ``PIPE_EVENTS``) on the current stream."""
        if self.fork:
            self.p.event_record(self._pipe[k].handle, self.stream)

    def after(self, k: int) -> None:
        """The current stream waits for what preceded ``mark(k)`` (its latest record)."""
        if self.fork:
            self.p.stream_wait_event(self.stream, self._pipe[k].handle)

    # ---- primitives ---------------------------------------------------------------------------
    def _launch_1d(self, kernel: int, blocks: int, args: list[KernelArg], smem: int = 0) -> None:
        """Launch ``kernel`` on ``blocks`` blocks of ``THREADS`` threads on the current stream."""
        self.p.launch(kernel, (blocks, 1, 1), (THREADS, 1, 1), smem, self.stream, args)

    def gemm(
        self, m: int, n: int, k: int, a: int, lda: int, b: int, ldb: int, c: int, ldc: int, **kw: object
    ) -> None:
        self.p.gemm(self.stream, m, n, k, a, lda, b, ldb, c, ldc, dtype=self.dtype, **kw)  # type: ignore[arg-type]

    def dense(self, x: int, rows: int, n_in: int, w: int, n_out: int, out: int, **kw: object) -> None:
        """``out[rows, n_out] (=|+=) alpha · x[rows, n_in] · W[n_out, n_in]ᵀ`` (no bias)."""
        self.gemm(rows, n_out, n_in, x, n_in, w, n_in, out, n_out, trans_b=True, **kw)

    def bias_act(self, y: int, bias: int, rows: int, n: int, act: int) -> None:
        """``y = act(y + bias)`` in place, bias broadcast over rows."""
        grid, block = rows_grid(rows, n, self.vec, self.p.info.warp_size)
        self.p.launch(self.k_bias_act, grid, block, 0, self.stream, [P(y), P(bias), I(rows), I(n), I(act)])

    def prepare_layernorm(self, n: int, act: int) -> None:
        """Compile the LayerNorm kernel for rows of ``n`` with activation ``act`` (at build time, so
        no compile happens inside a forward pass or a graph capture)."""
        if (n, act) not in self._ln:
            cfg = ln_config(n, self.vec, act, self.p.info.warp_size)
            self._ln[(n, act)] = (self.function("layernorm.hip", "residual_layernorm", cfg), cfg)

    def layernorm(
        self,
        n: int,
        y: int,
        bias: int,
        out: int,
        gamma: int,
        beta: int,
        rows: int,
        eps: float,
        act: int,
        skip: int = 0,
        alpha: float = 1.0,
    ) -> None:
        """``out = LN(act(y + bias) + alpha·skip)`` per row of ``n`` (kernels/layernorm.hip)."""
        fn, cfg = self._ln[(n, act)]
        per_block = cfg["LC0_LN_ROWS"]
        self.p.launch(
            fn,
            ((rows + per_block - 1) // per_block, 1, 1),
            (cfg["LC0_LN_THREADS"] * per_block, 1, 1),
            0,
            self.stream,
            [P(y), P(bias), P(skip), P(out), P(gamma), P(beta), I(rows), F(alpha), F(eps), I(act)],
        )

    def prepare_dense_rows(self, n: int, k: int, act: int) -> None:
        """Compile ``dense_rows_layernorm`` for ``n`` outputs of ``k`` inputs and activation ``act``
        (at build time, as ``prepare_layernorm``)."""
        if (n, k, act) not in self._dense_rows:
            cfg = dense_rows_config(n, k, act, self.p.info.warp_size)
            fn = self.function("dense_rows.hip", "dense_rows_layernorm", cfg)
            self._dense_rows[(n, k, act)] = (fn, cfg)

    def dense_rows_layernorm(
        self,
        x: int,
        rows: int,
        k: int,
        w: int,
        n: int,
        bias: int,
        gamma: int,
        beta: int,
        out: int,
        eps: float,
        act: int,
        scratch: int,
        counter: int,
    ) -> None:
        """``out[r, :] = LN(act(x[r, :] · Wᵀ + bias)) · gamma + beta`` for ``rows`` <= ``DENSE_ROWS_MAX``
        rows in one launch (kernels/dense_rows.hip); ``scratch``: float ``[DENSE_ROWS_MAX, n]``,
        ``counter``: a u32 that is 0 (the kernel leaves it 0)."""
        if not 1 <= rows <= DENSE_ROWS_MAX:
            raise ValueError(f"dense_rows_layernorm takes 1..{DENSE_ROWS_MAX} rows, not {rows}")
        fn, cfg = self._dense_rows[(n, k, act)]
        threads = cfg["LC0_DR_WARPS"] * self.p.info.warp_size
        args: list[KernelArg] = [P(x), P(w), P(bias), P(gamma), P(beta), P(out), P(scratch), P(counter)]
        args += [I(rows), F(eps), I(act)]
        self.p.launch(fn, (dense_rows_grid(cfg), 1, 1), (threads, 1, 1), 0, self.stream, args)

    def prepare_compress_rows(
        self, seq: int, e: int, hc: int, n: int, act: int, prenorm: bool = False
    ) -> None:
        """Compile ``compress_rows_layernorm`` for these widths and activation ``act`` (at build
        time, as ``prepare_layernorm``); ``prenorm``: also look up its ``compress_rows_prenorm``
        entry (the same module)."""
        key = (seq, e, hc, n, act)
        if key not in self._compress_rows:
            cfg = compress_rows_config(seq, e, hc, n, act)
            fn = self.function("compress_rows.hip", "compress_rows_layernorm", cfg)
            self._compress_rows[key] = (fn, cfg)
        if prenorm and key not in self._compress_prenorm:
            cfg = self._compress_rows[key][1]
            fn = self.function("compress_rows.hip", "compress_rows_prenorm", cfg)
            self._compress_prenorm[key] = (fn, cfg)

    def compress_rows_layernorm(
        self,
        x: int,
        rows: int,
        shape: tuple[int, int, int, int],
        compress_w: int,
        w: int,
        bias: int,
        gamma: int,
        beta: int,
        out: int,
        eps: float,
        act: int,
        scratch: int,
        counters: int,
    ) -> None:
        """``out[r, :] = LN(act(flatten(x[r] · Wcᵀ) · Wᵀ + bias)) · gamma + beta`` for ``rows`` <=
        ``COMPRESS_ROWS_MAX`` positions in one launch (kernels/compress_rows.hip). ``shape``: (seq, e,
        hc, n); ``x``: ``[rows, seq, e]``; ``compress_w``: ``[hc, e]``; ``w``: ``[n, seq·hc]``;
        ``scratch``: float ``[COMPRESS_ROWS_MAX, seq, n]``; ``counters``: ``COMPRESS_ROWS_MAX`` u32 that are
        0 (the kernel leaves them 0)."""
        if not 1 <= rows <= COMPRESS_ROWS_MAX:
            raise ValueError(f"compress_rows_layernorm takes 1..{COMPRESS_ROWS_MAX} rows, not {rows}")
        seq = shape[0]
        fn, cfg = self._compress_rows[shape + (act,)]
        threads = cfg["LC0_CR_WARPS"] * self.p.info.warp_size
        args: list[KernelArg] = [P(x), P(compress_w), P(w), P(bias), P(gamma), P(beta), P(out), P(scratch)]
        args += [P(counters), F(eps), I(act)]
        self.p.launch(fn, (rows * seq, 1, 1), (threads, 1, 1), 0, self.stream, args)

    def compress_rows_prenorm(
        self,
        y: int,
        skip: int,
        pre: tuple[int, int, int, float],
        rows: int,
        shape: tuple[int, int, int, int],
        compress_w: int,
        w: int,
        bias: int,
        gamma: int,
        beta: int,
        out: int,
        eps: float,
        act: int,
        scratch: int,
        counters: int,
    ) -> None:
        """``compress_rows_layernorm`` of ``x = LN(y + pre_bias + skip) · pre_gamma + pre_beta``,
        that LayerNorm formed per token inside the kernel (``pre``: its bias, gamma, beta and eps;
        ``y``, ``skip``: ``[rows, seq, e]``), so it need not wait for the LayerNorm kernel that
        writes ``x`` (kernels/compress_rows.hip, ``smolgen_early``)."""
        if not 1 <= rows <= COMPRESS_ROWS_MAX:
            raise ValueError(f"compress_rows_prenorm takes 1..{COMPRESS_ROWS_MAX} rows, not {rows}")
        pre_bias, pre_gamma, pre_beta, pre_eps = pre
        fn, cfg = self._compress_prenorm[shape + (act,)]
        threads = cfg["LC0_CR_WARPS"] * self.p.info.warp_size
        args: list[KernelArg] = [P(y), P(skip), P(pre_bias), P(pre_gamma), P(pre_beta), F(pre_eps)]
        args += [P(compress_w), P(w), P(bias), P(gamma), P(beta), P(out), P(scratch), P(counters)]
        args += [F(eps), I(act)]
        self.p.launch(fn, (rows * shape[0], 1, 1), (threads, 1, 1), 0, self.stream, args)

    def prepare_smolgen_chain(self, seq: int, e: int, hc: int, hs: int, n2: int) -> None:
        """Compile ``smolgen_chain`` for these widths (at build time, as ``prepare_layernorm``)."""
        key = (seq, e, hc, hs, n2)
        if key not in self._smolgen_chain:
            cfg = smolgen_chain_config(seq, e, hc, hs, n2)
            fn = self.function("smolgen_chain.hip", "smolgen_chain", cfg)
            self._smolgen_chain[key] = (fn, cfg)

    def smolgen_chain(
        self,
        x: int,
        rows: int,
        shape: tuple[int, int, int, int, int],
        wc: int,
        w1: int,
        b1: int,
        g1: int,
        be1: int,
        w2: int,
        b2: int,
        g2: int,
        be2: int,
        out: int,
        eps: tuple[float, float],
        act: int,
        scratch: int,
        sync: int,
    ) -> None:
        """smolgen's compress, dense 1 + act + LN1 and dense 2 + act + LN2 of ``rows`` <=
        ``SMOLGEN_CHAIN_MAX`` positions in one launch (kernels/smolgen_chain.hip): ``x`` the
        layer input ``[rows·seq, e]``, ``out`` ``[rows, n2]``; ``shape`` = (seq, e, hc, hs, n2);
        ``scratch``: float ``[SMOLGEN_CHAIN_MAX, seq·hc + hs + n2]``, ``sync``: two u32 that are 0
        (the kernel leaves them 0)."""
        if not 1 <= rows <= SMOLGEN_CHAIN_MAX:
            raise ValueError(f"smolgen_chain takes 1..{SMOLGEN_CHAIN_MAX} positions, not {rows}")
        fn, cfg = self._smolgen_chain[shape]
        threads = cfg["LC0_SC_WARPS"] * self.p.info.warp_size
        args: list[KernelArg] = [P(x), P(wc), P(w1), P(b1), P(g1), P(be1), P(w2), P(b2), P(g2), P(be2)]
        args += [P(out), P(scratch), P(sync), I(rows), F(eps[0]), F(eps[1]), I(act)]
        blocks = smolgen_chain_blocks(self.p.info.sm_count)
        self.p.launch(fn, (blocks, 1, 1), (threads, 1, 1), smolgen_chain_shared_bytes(cfg), self.stream, args)

    def copy_columns(
        self, src: int, ld: int, col0: int, dst: int, rows: int, n: int, vectors: bool = False
    ) -> None:
        """``dst[r, :n] = src[r, col0:col0 + n]`` (row stride ``ld``), dst contiguous. ``vectors``:
        size the grid for the kernel's 16-byte path (column counts that are vector multiples)."""
        per = n // self.vec if vectors else n
        blocks = blocks_for(rows * per)
        self._launch_1d(self.k_copy_cols, blocks, [P(src), I(ld), I(col0), P(dst), I(rows), I(n)])

    def embed_epilogue(self, y: int, sqbias: int, mult: int, add: int, m: int, e: int, act: int) -> None:
        """``y = act(y + sqbias[s]) * mult[s] + add[s]`` in place (no gating where mult/add are 0)."""
        grid, block = rows_grid(m, e, self.vec, self.p.info.warp_size)
        args: list[KernelArg] = [P(y), P(sqbias), P(mult), P(add), I(m), I(e), I(act)]
        self.p.launch(self.k_embed, grid, block, 0, self.stream, args)

    def expand_planes(self, masks: int, values: int, tokens: int, bsz: int) -> None:
        """Compact planes (uint64 masks + float values) -> dense tokens ``[B*64, 112]``."""
        args: list[KernelArg] = [P(masks), P(values), P(tokens), I(PLANES)]
        self.p.launch(self.k_expand, (bsz, EXPAND_PARTS, 1), (THREADS, 1, 1), 0, self.stream, args)

    def policy_gather(
        self, logits: int, keys: int, ld: int, promo: int, pd: int, gather: int, out: int, bsz: int
    ) -> None:
        """The 64×64 attention-policy logits + promotion offsets -> lc0's 1858 policy (float32)."""
        args: list[KernelArg] = [P(logits), P(keys), I(ld), P(promo), I(pd), P(gather), I(POLICY_OUT), P(out)]
        grid = (bsz, policy_gather_parts(bsz), 1)
        self.p.launch(self.k_gather, grid, (THREADS, 1, 1), 0, self.stream, args)

    # ---- residual (SE-ResNet) bodies: kernels/residual.hip, compiled only for residual nets ----
    def prepare_residual(self, step_c: int, se_outside: bool = False) -> None:
        """Compile the im2col, SE/residual and gather kernels (at build time, not in a capture);
        the fused steps with ``LC0_STEP_C = step_c`` (the body's width, its row strides then
        constants; 0: any, read from the launch's argument); ``se_outside``: also the fused steps
        that write sums / apply gates, and ``se_gates`` (``LC0_SE_OUTSIDE``: a second build, so that
        the plain steps carry none of it)."""
        self.step_c = step_c
        self.k_im2col = self.function("residual.hip", "im2col3x3", {})
        self.k_se = self.function("residual.hip", "se_residual", {})
        self.k_gather_bias = self.function("policy_map.hip", "gather_bias", {})
        self.k_wino_in = self.function("residual.hip", "winograd_input", {})
        self.k_wino_out = self.function("residual.hip", "winograd_output", {})
        self.k_wino_fused, self.k_wino_split, self.k_wino_staged = self._fused_steps(False)
        self.k_wino_fused_se = self.k_wino_split_se = self.k_wino_staged_se = self.k_se_gates = 0
        if se_outside:
            self.k_wino_fused_se, self.k_wino_split_se, self.k_wino_staged_se = self._fused_steps(True)
            self.k_se_gates = self.function("residual.hip", "se_gates", self._fused_defines(True))

    def _fused_defines(self, se_outside: bool) -> dict[str, int]:
        return {
            "LC0_STEP_C": self.step_c,
            "LC0_FUSED_MAX_C": FUSED_WINOGRAD_MAX_C,
            "LC0_SPLIT_MAX_THREADS": SPLIT_FUSED_MAX_THREADS,
            "LC0_SE_OUTSIDE": int(se_outside),
            "LC0_SE_GATES_POS": SE_GATES_POSITIONS,
            "LC0_SE_GATES_KC": SE_GATES_K_CHUNK,
        }

    def _fused_steps(self, se_outside: bool) -> tuple[int, int, int]:
        """The direct, split and staged fused-step kernels of one ``LC0_SE_OUTSIDE`` build."""
        defines = self._fused_defines(se_outside)
        direct = self.function("residual.hip", "winograd_output_fused", defines)
        split = self.function("residual.hip", "winograd_output_fused_split", defines)
        staged = self.function("residual.hip", "winograd_output_fused_split_staged", defines)
        self.p.set_max_dynamic_shared(staged, self.p.info.shared_mem_per_block_optin)
        return direct, split, staged

    def winograd_fused(
        self, kernel: FusedStep, m: int, bias: int, skip: int, out: int, v: int,
        se: tuple[int, int, int, int] | None, c: int, s: int, act: int, bsz: int, stats: int = 0,
        gates: int = 0,
    ) -> None:
        """From the 36 GEMM outputs ``M``: ``y = act(SE(Aᵀ M A + bias) + skip)`` written to NHWC
        ``out`` and/or, transformed for the next 3x3 convolution, to ``V`` (pointer 0: not written;
        ``skip`` 0: no skip; ``se`` None: no SE). ``out`` may be ``skip``. ``kernel``: the form
        ``residual_kernels.choose_fused_step`` chose for this batch."""
        assert self.step_c in (0, c), (c, self.step_c)
        w1, b1, w2t, b2 = se if se is not None else (0, 0, 0, 0)
        args: list[KernelArg] = [
            P(m), P(bias), P(skip), P(out), P(v), P(w1), P(b1), P(w2t), P(b2), I(bsz), I(c), I(s), I(act),
            P(stats), P(gates),
        ]
        if stats or gates:
            assert self.k_wino_fused_se, "prepare_residual(se_outside=True) compiles these"
            k_direct, k_split, k_staged = self.k_wino_fused_se, self.k_wino_split_se, self.k_wino_staged_se
        else:
            k_direct, k_split, k_staged = self.k_wino_fused, self.k_wino_split, self.k_wino_staged
        if kernel is FusedStep.STAGED:
            grid = split_staged_grid(c, s, self.elem, self.p.info, bsz)
            smem = split_staged_smem(c, s, self.elem)
            self.p.launch(k_staged, (grid, 1, 1), (c, 4, 1), smem, self.stream, args)
        elif kernel is FusedStep.SPLIT:
            self.p.launch(k_split, (bsz, 1, 1), (c, 4, 1), split_fused_smem(c, s), self.stream, args)
        else:
            per = fused_positions_per_block(c)
            smem = per * (c + s) * 4 if se is not None else 0
            self.p.launch(k_direct, (-(-bsz // per), 1, 1), (c, per, 1), smem, self.stream, args)

    def se_gates_kernel(self, hpre: int, b1f: int, w2t: int, b2: int, gates: int, c: int, s: int, act: int,
                        bsz: int) -> None:
        """``gates [B, 2C]`` = (sigmoid(z[:C]), z[C:]), z = W2 act(hpre + b1f) + b2, per position
        (``SE_GATES_POSITIONS`` positions and ``SE_GATES_THREADS`` outputs a block)."""
        args: list[KernelArg] = [P(hpre), P(b1f), P(w2t), P(b2), P(gates), I(bsz), I(c), I(s), I(act)]
        grid = (-(-bsz // SE_GATES_POSITIONS), -(-2 * c // SE_GATES_THREADS), 1)
        kp = -(-s // SE_GATES_K_CHUNK) * SE_GATES_K_CHUNK
        smem = kp * SE_GATES_POSITIONS * 4
        self.p.launch(self.k_se_gates, grid, (SE_GATES_THREADS, 1, 1), smem, self.stream, args)

    def winograd_input(self, x: int, v: int, bsz: int, c: int) -> None:
        """``V[b*4 + tile, k, c] = (Bᵀ d B)[k]`` of the 6x6 patches of NHWC ``x [B*64, c]``
        (tile-major: kernels/residual.hip)."""
        blocks = blocks_for(bsz * 4 * c)
        args: list[KernelArg] = [P(x), P(v), I(bsz), I(c)]
        self._launch_1d(self.k_wino_in, blocks, args)

    def winograd_output(self, m: int, bias: int, y: int, bsz: int, c: int, act: int) -> None:
        """NHWC ``y = act(Aᵀ M A + bias)`` from the 36 GEMM outputs (``bias`` 0: none)."""
        blocks = blocks_for(bsz * 4 * c)
        args: list[KernelArg] = [P(m), P(bias), P(y), I(bsz), I(c), I(act)]
        self._launch_1d(self.k_wino_out, blocks, args)

    def im2col3x3(self, x: int, cols: int, rows: int, c: int) -> None:
        """``cols[r, t*c + k] = x[neighbour(r, t), k]`` (0 off the board): ``[rows, c]`` -> ``[rows, 9c]``."""
        per = c // self.vec if c % self.vec == 0 else c
        blocks = blocks_for(rows * 9 * per)
        args: list[KernelArg] = [P(x), P(cols), I(rows), I(c)]
        self._launch_1d(self.k_im2col, blocks, args)

    def se_residual(
        self, y: int, bias: int, skip: int, out: int, se: tuple[int, int, int, int] | None, c: int, s: int,
        act: int, bsz: int,
    ) -> None:
        """``out = act(SE(y + bias) + skip)`` per position (``se`` = fc1_w, fc1_b, fc2_wᵀ, fc2_b, or
        None for a block without SE: ``act(y + bias + skip)``); ``out`` may be ``skip``."""
        w1, b1, w2, b2 = se if se is not None else (0, 0, 0, 0)
        smem = (3 * c + s) * 4 if se is not None else 0
        args: list[KernelArg] = [P(y), P(bias), P(skip), P(out), P(w1), P(b1), P(w2), P(b2)]
        args += [I(c), I(s), I(act)]
        self._launch_1d(self.k_se, bsz, args, smem)

    def gather_bias(self, src: int, stride: int, gather: int, bias: int, out: int, bsz: int) -> None:
        """``out[b, k] = src[b*stride + gather[k]] + bias[k]`` as float32 ``[B, 1858]``."""
        args: list[KernelArg] = [P(src), I(stride), P(gather), P(bias), I(POLICY_OUT), P(out)]
        grid = (bsz, policy_gather_parts(bsz), 1)
        self.p.launch(self.k_gather_bias, grid, (THREADS, 1, 1), 0, self.stream, args)

    def softmax_kernel(self, seq: int) -> int:
        """The fallback attention's bias + softmax kernel (one warp per row), compiled once."""
        if self._softmax is None:
            warp = self.p.info.warp_size  # 64 lanes on CDNA, 32 elsewhere
            self._softmax = self.function(
                "softmax_bias.hip", "softmax_bias", {"LC0_SM_PER": (seq + warp - 1) // warp}
            )
        return self._softmax

    def softmax_bias(self, scores: int, bias: int, rows: int, seq: int, scale_log2: float) -> None:
        """``scores = softmax(scores·scale + bias)`` per row, in the exp2 domain (bias pre-scaled)."""
        warps = 4
        self.p.launch(
            self.softmax_kernel(seq),
            ((rows + warps - 1) // warps, 1, 1),
            (self.p.info.warp_size * warps, 1, 1),
            0,
            self.stream,
            [P(scores), P(bias), LL(rows), I(seq), F(scale_log2)],
        )

    def close(self) -> None:
        for ev in self._events + self._pipe:
            self.p.destroy_event(ev)
        self._events = []
        self._pipe = []
        if self.side != self.main:
            self.p.destroy_stream(self.side)
        self.p.destroy_stream(self.main)
