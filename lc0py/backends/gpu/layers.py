"""The layers of the GPU forward pass, each built from a typed record of device pointers.

A layer holds its weights (a ``weights.*Weights[int]`` record: one field per device array), the
sizes it needs and its activation codes; ``forward`` enqueues its launches on ``GpuOps`` against
the activation ``Buffers``. ``GpuModel`` is the net: an embedding, a loop over encoder layers,
then the heads. Per encoder layer (fp16: fp16 buffers, fp32 accumulation and LN statistics)::

    qkvc = x · [Wq;Wk;Wv;Wc]ᵀ                      one GEMM, N = 3D + hc (biases applied in attention)
    G    = smolgen(c)                              copy c out, dense1 GEMM + act/LN kernel,
                                                   dense2 GEMM + act/LN kernel, global GEMM -> [B,H,64,64]
    O    = flash(qkv, G)                           one kernel: QKᵀ·scale + G -> online softmax -> ·V
           (fallback: bias kernel, per-head batched GEMMs QKᵀ, softmax_bias kernel, GEMMs P·V)
    x   += α · O·Woᵀ                               GEMM with beta = 1 (residual in its epilogue)
    x1   = LN(x + α·bo)                            one kernel
    x1  += α · act(x1·W1ᵀ + b1)·W2ᵀ                GEMM, bias/act kernel, GEMM with beta = 1
    x    = LN(x1 + α·b2)                           one kernel

The FFN block (``Ffn``) is the same object in an encoder layer and in the PE_DENSE embedding.
``fusions.Fusions`` switches steps (each a backend option, chosen per batch size: each pass asks
``Fusions.at(bsz)``): ``ln_residual`` takes the residual adds out of the GEMMs (beta = 0) into the
LayerNorm kernel (``LN(y + α·b + x)``, same result); ``smolgen_branch`` computes the compress
columns with their own GEMM and runs smolgen's dense/LN steps on the side stream beside the QKV
GEMM; ``row_halves`` pipelines the block after attention over two halves of the batch.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable

from lc0py.backends.gpu.fusions import NO_FUSIONS, Fusions
from lc0py.backends.gpu.kernels import (
    AttentionChoice,
    AttentionKernel,
    blocks_per_sm,
    choose_attention,
    flash_grid,
    flash_shape_defines,
)
from lc0py.backends.gpu.ops import F, GpuOps, I, P
from lc0py.backends.gpu.weights import (
    LOG2E,
    PLANES,
    SEQ,
    AttentionPolicyWeights,
    Buffers,
    EncoderWeights,
    FcHeadWeights,
    FfnWeights,
    ModelWeights,
    NetShape,
    PeDenseEmbeddingWeights,
    PeMapEmbeddingWeights,
    SmolgenWeights,
    activation_code,
)
from lc0py.errors import Lc0pyError
from lc0py.gpu.compile_cache import KernelCache
from lc0py.weights.network import Activation, Network

log = logging.getLogger("lc0py.backends.gpu")
_logged: set[str] = set()

ACT_NONE = int(Activation.NONE)

#: side-stream branch indices (``GpuOps.branch``): value/moves-left heads, smolgen beside the QKV GEMM
HEADS_BRANCH, SMOLGEN_BRANCH = 0, 1

#: ``tap(name, device pointer, row width)``: verify's hook for per-layer intermediates.
Tap = Callable[[str, int, int], None]


def log_once(message: str) -> None:
    """One log line per distinct message per process (fallback notices)."""
    if message not in _logged:
        _logged.add(message)
        log.warning(message)


class Ffn:
    """``x1 += alpha · act(x1 W1ᵀ + b1) W2ᵀ``, then ``out = LN(x1 + alpha·b2)``; with
    ``ln_residual`` (per call: the caller's batch decides) the GEMM writes ``alpha · act(...) W2ᵀ``
    into ``out`` and the LayerNorm adds ``x1`` (``out`` must not be ``x1``)."""

    def __init__(
        self,
        ops: GpuOps,
        w: FfnWeights[int],
        n: int,
        hidden: int,
        act: int,
        alpha: float,
        eps: float,
    ) -> None:
        self.w, self.n, self.hidden, self.act, self.alpha, self.eps = w, n, hidden, act, alpha, eps
        ops.prepare_layernorm(n, ACT_NONE)

    def forward(self, ops: GpuOps, x1: int, hidden: int, out: int, m: int, ln_residual: bool = False) -> None:
        self.expand(ops, x1, hidden, m)
        self.activate(ops, hidden, m)
        self.contract(ops, hidden, x1, out, m, ln_residual=ln_residual)
        self.normalize(ops, x1, out, m, ln_residual)

    # the four steps, separately for ``EncoderLayer``'s row-halves pipeline (``sms``: GEMM target)
    def expand(self, ops: GpuOps, x1: int, hidden: int, m: int, sms: int = 0) -> None:
        """``hidden = x1 · W1ᵀ`` (no bias)."""
        ops.dense(x1, m, self.n, self.w.w1, self.hidden, hidden, sms=sms)

    def activate(self, ops: GpuOps, hidden: int, m: int) -> None:
        """``hidden = act(hidden + b1)`` in place."""
        ops.bias_act(hidden, self.w.b1, m, self.hidden, self.act)

    def contract(
        self, ops: GpuOps, hidden: int, x1: int, out: int, m: int, sms: int = 0, ln_residual: bool = False
    ) -> None:
        """``x1 += alpha · hidden · W2ᵀ``, or with ``ln_residual`` ``out = alpha · hidden · W2ᵀ``."""
        if ln_residual:
            assert out != x1, "ln_residual: the FFN output must not overwrite its skip"
            ops.dense(hidden, m, self.hidden, self.w.w2, self.n, out, alpha=self.alpha, sms=sms)
        else:
            ops.dense(hidden, m, self.hidden, self.w.w2, self.n, x1, alpha=self.alpha, beta=1.0, sms=sms)

    def normalize_into(self, ops: GpuOps, y: int, x1: int, out: int, m: int) -> None:
        """``out = LN(y + alpha·b2 + x1)``: ``normalize`` with ``ln_residual`` from an FFN output
        ``y`` that is not overwritten (``smolgen_early`` reads it beside this kernel)."""
        w = self.w
        ops.layernorm(self.n, y, w.b2_alpha, out, w.ln_g, w.ln_b, m, self.eps, ACT_NONE, skip=x1)

    def normalize(self, ops: GpuOps, x1: int, out: int, m: int, ln_residual: bool = False) -> None:
        """``out = LN(x1 + alpha·b2)`` (``ln_residual``: ``LN(out + alpha·b2 + x1)``, in place)."""
        if ln_residual:
            self.normalize_into(ops, out, x1, out, m)
        else:
            w = self.w
            ops.layernorm(self.n, x1, w.b2_alpha, out, w.ln_g, w.ln_b, m, self.eps, ACT_NONE)


class Smolgen:
    """The per-position attention bias ``G [B, H, 64, 64]`` (pre-scaled by log2 e) from the
    compress columns of the fused QKV projection."""

    def __init__(
        self,
        ops: GpuOps,
        w: SmolgenWeights[int],
        global_w: int,
        s: NetShape,
        act: int,
        eps: tuple[float, float],
        rows: bool = False,
        chain: bool = False,
        compress: bool = False,
        dense1_rows: bool | None = None,
        early: bool = False,
    ) -> None:
        """``rows`` / ``chain`` / ``compress``: some batches take the ``smolgen_rows`` /
        ``smolgen_chain`` / ``smolgen_compress`` fusion (their kernels are compiled now; ``early``:
        ``compress`` with ``smolgen_early``, so the ``compress_rows_prenorm`` entry too);
        ``dense1_rows``: some take ``smolgen_rows`` without ``smolgen_compress`` (``Fusions.dense1_rows``;
        None: ``rows and not compress``)."""
        self.w, self.global_w, self.s, self.act, self.eps = w, global_w, s, act, eps
        ops.prepare_layernorm(s.hs, act)
        ops.prepare_layernorm(s.H * s.gs, act)
        self.compress_shape = (SEQ, s.E, s.hc, s.hs)
        if compress:
            ops.prepare_compress_rows(*self.compress_shape, act, prenorm=early)
        if rows and (dense1_rows if dense1_rows is not None else not compress):
            ops.prepare_dense_rows(s.hs, SEQ * s.hc, act)
        if rows:
            ops.prepare_dense_rows(s.H * s.gs, s.hs, act)
        self.chain_shape = (SEQ, s.E, s.hc, s.hs, s.H * s.gs)
        if chain:
            ops.prepare_smolgen_chain(*self.chain_shape)

    def forward(
        self, ops: GpuOps, buf: Buffers, bsz: int, rows: bool = False, chain: bool = False, x: int = 0,
        compress_w: int = 0, compress: bool = False,
    ) -> None:
        """``buf.sg_g`` from the compress columns of ``buf.qkv`` (the fused projection's output),
        or with ``chain`` / ``compress`` (and ``rows``) from the layer input ``x`` and the compress
        rows ``compress_w``."""
        if not (chain or compress):
            x = compress_w = 0
        self.mlp(ops, buf, bsz, x=x, compress_w=compress_w, rows=rows, chain=chain, compress=compress)
        self.generate(ops, buf, bsz)

    def mlp(
        self, ops: GpuOps, buf: Buffers, bsz: int, x: int = 0, compress_w: int = 0, rows: bool = False,
        chain: bool = False, compress: bool = False,
    ) -> None:
        """``buf.sg_s2``: dense1 -> act/LN -> dense2 -> act/LN of the compress columns, copied out
        of ``buf.qkv``, or (``compress_w``: the compress rows ``[hc, E]`` of the fused weight) a
        GEMM of the layer input ``x`` straight into the contiguous ``[B, 64·hc]`` dense1 reads.
        ``rows`` (the ``smolgen_rows`` fusion): each dense layer with its LayerNorm in one kernel;
        ``compress`` (``smolgen_compress``, needs ``x`` and ``compress_w``): the compress and dense
        1 + LN in one kernel, then dense 2 by ``dense_rows`` (``rows``) or its GEMM and LayerNorm;
        ``chain`` (``smolgen_chain``, needs ``x`` and ``compress_w``): all of it in one kernel."""
        s, w = self.s, self.w
        m = bsz * SEQ
        if (compress or chain) and not (x and compress_w):
            fusion = "smolgen_chain" if chain else "smolgen_compress"
            raise ValueError(f"{fusion} reads the layer input and the compress rows")
        if compress and not chain:
            ops.compress_rows_layernorm(x, bsz, self.compress_shape, compress_w, w.d1_w, w.d1_b, w.ln1_g,
                                        w.ln1_b, buf.sg_s1, self.eps[0], self.act, buf.sg_pre, buf.sg_count)
            self._dense2(ops, buf, bsz, rows)
            return
        if chain:
            ops.smolgen_chain(
                x, bsz, self.chain_shape, compress_w, w.d1_w, w.d1_b, w.ln1_g, w.ln1_b, w.d2_w, w.d2_b,
                w.ln2_g, w.ln2_b, buf.sg_s2, self.eps, self.act, buf.sg_pre, buf.sg_count,
            )
            return
        if compress_w:
            ops.dense(x, m, s.E, compress_w, s.hc, buf.sg_c)
        else:
            ops.copy_columns(buf.qkv, s.qkv_ld, 3 * s.D, buf.sg_c, m, s.hc, vectors=True)
        if rows:
            ops.dense_rows_layernorm(buf.sg_c, bsz, SEQ * s.hc, w.d1_w, s.hs, w.d1_b, w.ln1_g, w.ln1_b,
                                     buf.sg_s1, self.eps[0], self.act, buf.sg_pre, buf.sg_count)
        else:
            ops.dense(buf.sg_c, bsz, SEQ * s.hc, w.d1_w, s.hs, buf.sg_s1)
            ops.layernorm(s.hs, buf.sg_s1, w.d1_b, buf.sg_s1, w.ln1_g, w.ln1_b, bsz, self.eps[0], self.act)
        self._dense2(ops, buf, bsz, rows)

    def mlp_early(
        self, ops: GpuOps, buf: Buffers, bsz: int, y: int, skip: int, pre: tuple[int, int, int, float],
        compress_w: int, rows: bool,
    ) -> None:
        """``mlp`` with ``compress`` (``smolgen_early``) from the previous layer's FFN output ``y``
        before its closing LayerNorm ``LN(y + pre_bias + skip)`` (``pre``: bias, gamma, beta,
        eps), which the compress kernel forms per token itself."""
        w = self.w
        ops.compress_rows_prenorm(y, skip, pre, bsz, self.compress_shape, compress_w, w.d1_w, w.d1_b,
                                  w.ln1_g, w.ln1_b, buf.sg_s1, self.eps[0], self.act, buf.sg_pre,
                                  buf.sg_count)
        self._dense2(ops, buf, bsz, rows)

    def _dense2(self, ops: GpuOps, buf: Buffers, bsz: int, rows: bool) -> None:
        """``buf.sg_s2`` = dense 2 + act/LN of ``buf.sg_s1``: ``dense_rows`` (``rows``) or its GEMM
        and LayerNorm."""
        s, w = self.s, self.w
        e2 = self.eps[1]
        if rows:
            ops.dense_rows_layernorm(buf.sg_s1, bsz, s.hs, w.d2_w, s.H * s.gs, w.d2_b, w.ln2_g, w.ln2_b,
                                     buf.sg_s2, e2, self.act, buf.sg_pre, buf.sg_count)
        else:
            ops.dense(buf.sg_s1, bsz, s.hs, w.d2_w, s.H * s.gs, buf.sg_s2)
            ops.layernorm(s.H * s.gs, buf.sg_s2, w.d2_b, buf.sg_s2, w.ln2_g, w.ln2_b, bsz, e2, self.act)

    def generate(self, ops: GpuOps, buf: Buffers, bsz: int) -> None:
        """``buf.sg_g [B·H, 64·64]`` = ``sg_s2 [B·H, gs]`` times the shared generator weight."""
        s = self.s
        ops.dense(buf.sg_s2, bsz * s.H, s.gs, self.global_w, SEQ * SEQ, buf.sg_g)


class Attention:
    """Softmax(QKᵀ·scale + G)·V over the interleaved ``[B, 64, H·depth]`` layout: the fused flash
    kernel, or the GEMM + softmax fallback. One object serves every encoder layer (the kernel
    depends on the shape only); ``rebuild`` swaps the flash kernel's run-time parameters."""

    def __init__(
        self, ops: GpuOps, cache: KernelCache, s: NetShape, flash: bool, overrides: dict[str, int] | None
    ):
        self.ops, self.cache, self.s = ops, cache, s
        self.choice = self._choose(flash, overrides)
        self._build()

    def _choose(self, flash: bool, overrides: dict[str, int] | None) -> AttentionChoice:
        info = self.ops.p.info
        return choose_attention(
            depth=self.s.depth,
            seq=SEQ,
            fp16=self.ops.fp16,
            vendor=info.vendor,
            arch=info.arch,
            shared_optin=info.shared_mem_per_block_optin,
            flash=flash,
            overrides=overrides,
            scratch_per_warp=info.mma_scratch_elems,
        )

    def _build(self) -> None:
        ops, s, ch = self.ops, self.s, self.choice
        self.k_flash: int | None = None
        self.smem = 0
        self.resident = 1  # persistent kernel: blocks per multiprocessor
        if ch.is_flash:
            assert ch.params is not None
            scratch = ops.p.info.mma_scratch_elems
            try:
                defines = ch.params.defines(
                    s.depth, ops.fp16, bias_f32=not ops.fp16, scratch_per_warp=scratch
                )
                # the launch in forward() passes these same numbers
                defines.update(flash_shape_defines(ch.kernel, SEQ, s.H, s.qkv_ld, s.D))
                self.k_flash = self.cache.function("flash_attention.hip", ch.kernel.value, defines)
                self.smem = ch.params.shared_bytes(s.depth, ops.fp16, not ops.fp16, scratch)
                info = ops.p.info
                self.resident = blocks_per_sm(
                    ch.params, self.smem, info.shared_mem_per_block_optin, info.vendor
                )
                ops.p.set_max_dynamic_shared(self.k_flash, self.smem)
            except Lc0pyError as exc:
                self.choice = AttentionChoice(
                    AttentionKernel.FALLBACK, None, f"flash kernel failed to build: {exc}"
                )
                self.k_flash = None
        if not self.choice.is_flash:
            log_once(f"attention: using GEMM+softmax fallback ({self.choice.reason})")
            ops.softmax_kernel(SEQ)

    def rebuild(self, overrides: dict[str, int]) -> AttentionChoice:
        """Rebuild the flash kernel with other ``FlashParams`` fields; the fallback (with its
        reason) when they are invalid or fail to build."""
        self.choice = self._choose(True, overrides)
        self._build()
        return self.choice

    @property
    def uses_flash(self) -> bool:
        return self.k_flash is not None

    def forward(self, buf: Buffers, qkv_b: int, bsz: int, flash: bool) -> None:
        """``buf.attn = attention(buf.qkv, buf.sg_g)`` with the Q/V biases ``qkv_b`` (the K bias
        cancels in the softmax; V's is added after it)."""
        ops, s = self.ops, self.s
        qkv, o = buf.qkv, buf.attn
        g = buf.sg_g if s.smolgen else 0
        scale = 1.0 / math.sqrt(s.depth)
        if flash and self.k_flash is not None:
            assert self.choice.params is not None
            info = ops.p.info
            grid, block = flash_grid(
                SEQ, s.H, bsz, self.choice.params, ops.fp16, info.warp_size,
                sm_count=info.sm_count, resident=self.resident,
            )
            persistent = self.choice.kernel is AttentionKernel.FLASH_MMA_PERSISTENT
            ops.p.launch(
                self.k_flash,
                grid,
                block,
                self.smem,
                ops.stream,
                [
                    P(qkv),
                    P(ops.off(qkv, s.D)),
                    P(ops.off(qkv, 2 * s.D)),
                    I(s.qkv_ld),
                    P(g),
                    P(qkv_b),
                    P(ops.off(qkv_b, 2 * s.D)),
                    P(o),
                    I(s.D),
                    I(SEQ),
                    I(s.H),
                    F(scale),
                    *([I(bsz)] if persistent else []),
                ],
            )
            return
        # Fallback: add all three biases, then per head: S = Q Kᵀ, softmax(S·scale + G), O = P V.
        sc = buf.scores
        ld = s.qkv_ld
        ops.bias_act(qkv, qkv_b, bsz * SEQ, ld, ACT_NONE)  # zeros on the compress columns
        tok = SEQ * ld  # elements between positions
        hs = SEQ * SEQ
        for h in range(s.H):
            ops.gemm(
                SEQ,
                SEQ,
                s.depth,
                ops.off(qkv, h * s.depth),
                ld,
                ops.off(qkv, s.D + h * s.depth),
                ld,
                ops.off(sc, h * hs),
                SEQ,
                trans_b=True,
                batch=bsz,
                stride_a=tok,
                stride_b=tok,
                stride_c=s.H * hs,
            )
        ops.softmax_bias(sc, g, bsz * s.H * SEQ, SEQ, scale * LOG2E)  # exp2 domain (G is pre-scaled)
        for h in range(s.H):
            ops.gemm(
                SEQ,
                s.depth,
                SEQ,
                ops.off(sc, h * hs),
                SEQ,
                ops.off(qkv, 2 * s.D + h * s.depth),
                ld,
                ops.off(o, h * s.depth),
                s.D,
                batch=bsz,
                stride_a=s.H * hs,
                stride_b=tok,
                stride_c=SEQ * s.D,
            )


class EncoderLayer:
    """One encoder block: fused QKV (+ smolgen compress), smolgen, attention, output projection
    with the residual in the GEMM, LayerNorm, FFN."""

    def __init__(
        self,
        ops: GpuOps,
        w: EncoderWeights[int],
        s: NetShape,
        attention: Attention,
        smolgen: Smolgen | None,
        ffn: Ffn,
        alpha: float,
        eps: float,
        index: int,
        fusions: Fusions = NO_FUSIONS,
    ) -> None:
        self.w, self.s, self.attention, self.smolgen, self.ffn = w, s, attention, smolgen, ffn
        self.alpha, self.eps, self.index, self.fusions = alpha, eps, index, fusions
        #: the neighbouring layers (``GpuModel`` links them): ``smolgen_early`` forks the next
        #: layer's smolgen chain from this layer's FFN output
        self.prev: EncoderLayer | None = None
        self.next: EncoderLayer | None = None
        ops.prepare_layernorm(s.E, ACT_NONE)

    def forks_next(self, f: Fusions) -> bool:
        """Whether a pass with paths ``f`` (``Fusions.at``) forks the next layer's smolgen chain
        from this layer's FFN output (``smolgen_early``; ``buf.attn`` holds that output, so the
        net's d_model must be at least its embedding width)."""
        nxt = self.next
        return f.smolgen_early and nxt is not None and nxt.smolgen is not None and self.s.D >= self.s.E

    def forward(self, ops: GpuOps, buf: Buffers, bsz: int, flash: bool, tap: Tap | None) -> None:
        s, w = self.s, self.w
        m = bsz * SEQ
        sg = self.smolgen
        f = self.fusions.at(bsz)  # this batch size's paths (a graph bucket captures its own)
        if sg is not None and f.smolgen_branch:
            # smolgen's small steps on the side stream beside Q|K|V (N = 3D into the qkv_ld-strided
            # buffer; the compress rows follow them in qkv_w and get their own GEMM there); with
            # smolgen_early the previous layer has forked them already
            compress_w = ops.off(w.qkv_w, 3 * s.D * s.E)
            if self.prev is None or not self.prev.forks_next(f):
                ops.branch(
                    SMOLGEN_BRANCH,
                    lambda: sg.mlp(ops, buf, bsz, x=buf.x, compress_w=compress_w, rows=f.smolgen_rows,
                                   chain=f.smolgen_chain, compress=f.smolgen_compress),
                )
            ops.gemm(m, 3 * s.D, s.E, buf.x, s.E, w.qkv_w, s.E, buf.qkv, s.qkv_ld, trans_b=True,
                     sms=f.gemm_sms)
            ops.join(SMOLGEN_BRANCH)
            sg.generate(ops, buf, bsz)
        else:
            ops.dense(buf.x, m, s.E, w.qkv_w, s.qkv_ld, buf.qkv)
            if sg is not None:
                sg.forward(ops, buf, bsz, rows=f.smolgen_rows, chain=f.smolgen_chain, x=buf.x,
                           compress_w=ops.off(w.qkv_w, 3 * s.D * s.E), compress=f.smolgen_compress)
        self.attention.forward(buf, w.qkv_b, bsz, flash)
        if tap is not None:
            tap(f"encoder{self.index}.attention", buf.attn, s.D)
        if f.row_halves:
            self._post_attention_halves(ops, buf, bsz, f)
            return
        self._project(ops, buf.attn, buf.x, buf.x1, m, f.ln_residual)
        self._normalize(ops, buf.x, buf.x1, m, f.ln_residual)
        if self.forks_next(f):
            self._ffn_forking_next(ops, buf, bsz, f)
        else:
            self.ffn.forward(ops, buf.x1, buf.ffn, buf.x, m, f.ln_residual)

    def _ffn_forking_next(self, ops: GpuOps, buf: Buffers, bsz: int, f: Fusions) -> None:
        """The FFN with ``smolgen_early``: FFN2 writes ``y`` into ``buf.attn`` (free until the next
        layer's attention, which runs after the fork's join); the next layer's smolgen chain forks
        there, forming ``LN(y + alpha·b2 + x1)`` per token itself, while the LayerNorm kernel writes
        the same rows into ``buf.x`` for the next layer's QKV GEMM."""
        ffn, nxt = self.ffn, self.next
        assert nxt is not None and nxt.smolgen is not None
        m = bsz * SEQ
        y = buf.attn
        ffn.expand(ops, buf.x1, buf.ffn, m)
        ffn.activate(ops, buf.ffn, m)
        ffn.contract(ops, buf.ffn, buf.x1, y, m, ln_residual=True)
        sg, fw = nxt.smolgen, ffn.w
        compress_w = ops.off(nxt.w.qkv_w, 3 * self.s.D * self.s.E)
        pre = (fw.b2_alpha, fw.ln_g, fw.ln_b, ffn.eps)
        ops.branch(
            SMOLGEN_BRANCH,
            lambda: sg.mlp_early(ops, buf, bsz, y=y, skip=buf.x1, pre=pre, compress_w=compress_w,
                                 rows=f.smolgen_rows),
        )
        ffn.normalize_into(ops, y, buf.x1, buf.x, m)

    def _project(
        self, ops: GpuOps, attn: int, x: int, x1: int, m: int, ln_residual: bool, sms: int = 0
    ) -> None:
        s, w = self.s, self.w
        if ln_residual:
            # x1 = alpha·O·Woᵀ (beta = 0); the LayerNorm adds the bias and the skip x in its pass
            ops.dense(attn, m, s.D, w.out_w, s.E, x1, alpha=self.alpha, sms=sms)
        else:
            # Residual inside the GEMM: x += alpha * O·Woᵀ (beta = 1, C = x in place), so the
            # LayerNorm reads one tensor instead of two; the bias enters the LN pre-scaled (alpha·bo).
            ops.dense(attn, m, s.D, w.out_w, s.E, x, alpha=self.alpha, beta=1.0, sms=sms)

    def _normalize(self, ops: GpuOps, x: int, x1: int, m: int, ln_residual: bool) -> None:
        s, w = self.s, self.w
        if ln_residual:
            ops.layernorm(s.E, x1, w.out_b_alpha, x1, w.ln1_g, w.ln1_b, m, self.eps, ACT_NONE, skip=x)
        else:
            ops.layernorm(s.E, x, w.out_b_alpha, x1, w.ln1_g, w.ln1_b, m, self.eps, ACT_NONE)

    def _post_attention_halves(self, ops: GpuOps, buf: Buffers, bsz: int, f: Fusions) -> None:
        """Out-projection, LN, FFN, LN on the two halves of the batch (``row_halves``): GEMMs on
        the main stream, each half's LayerNorms and bias + activation on the side stream beside
        the other half's GEMMs; pipeline events 0..9 order every read after its write and every
        write after the reads before it (tests/backends/gpu/test_fusions.py replays the order).

        main:  P0 | P1 E0 | E1 C0 | C1 N1 (end: waits for the side)
        side:       L0    | L1 A0 | A1 N0
        (P: out-projection, L: LN1, E: FFN1, A: bias + act, C: FFN2, N: LN2; digits: half)"""
        s, ffn, sms, ln = self.s, self.ffn, f.gemm_sms, f.ln_residual
        m0 = bsz // 2 * SEQ
        rows, counts = (0, m0), (m0, bsz * SEQ - m0)

        def at(ptr: int, h: int, width: int) -> int:
            return ops.off(ptr, rows[h] * width)

        def project(h: int, target: int) -> None:
            x, x1 = at(buf.x, h, s.E), at(buf.x1, h, s.E)
            self._project(ops, at(buf.attn, h, s.D), x, x1, counts[h], ln, target)

        def norm1(h: int) -> None:
            self._normalize(ops, at(buf.x, h, s.E), at(buf.x1, h, s.E), counts[h], ln)

        def expand(h: int) -> None:
            ffn.expand(ops, at(buf.x1, h, s.E), at(buf.ffn, h, ffn.hidden), counts[h], sms)

        def activate(h: int) -> None:
            ffn.activate(ops, at(buf.ffn, h, ffn.hidden), counts[h])

        def contract(h: int) -> None:
            hidden = at(buf.ffn, h, ffn.hidden)
            ffn.contract(ops, hidden, at(buf.x1, h, s.E), at(buf.x, h, s.E), counts[h], sms, ln)

        def norm2(h: int) -> None:
            ffn.normalize(ops, at(buf.x1, h, s.E), at(buf.x, h, s.E), counts[h], ln)

        try:
            ops.use(side=False)
            project(0, 0)
            ops.mark(0)
            ops.use(side=True)
            ops.after(0)
            norm1(0)
            ops.mark(1)
            ops.use(side=False)
            project(1, sms)
            ops.mark(2)
            ops.after(1)
            expand(0)
            ops.mark(3)
            ops.use(side=True)
            ops.after(2)
            norm1(1)
            ops.mark(4)
            ops.after(3)
            activate(0)
            ops.mark(5)
            ops.use(side=False)
            ops.after(4)
            expand(1)
            ops.mark(6)
            ops.after(5)
            contract(0)
            ops.mark(7)
            ops.use(side=True)
            ops.after(6)
            activate(1)
            ops.mark(8)
            ops.after(7)
            norm2(0)
            ops.mark(9)
            ops.use(side=False)
            ops.after(8)
            contract(1)
            norm2(1)
            ops.after(9)
        finally:
            ops.use(side=False)


class PeMapEmbedding:
    """``x = act(tokens · Wᵀ + sqbias[s]) (* mult[s] + add[s])``: K = 112, the positional
    encoding folded into a per-square bias."""

    def __init__(self, w: PeMapEmbeddingWeights[int], s: NetShape, act: int) -> None:
        self.w, self.s, self.act = w, s, act

    def forward(self, ops: GpuOps, buf: Buffers, bsz: int) -> None:
        w, s = self.w, self.s
        m = bsz * SEQ
        ops.dense(buf.tokens, m, PLANES, w.w, s.E, buf.x)
        ops.embed_epilogue(buf.x, w.sqbias, w.mult or 0, w.add or 0, m, s.E, self.act)


class PeDenseEmbedding:
    """PE_DENSE embedding (BT3/BT4 style) from ``tokens`` into ``x``::

    P  = tokens[:, 0:12] as [B, 768]            copy kernel (square-major, s*12 + p)
    U  = P·Wpreᵀ + bpre -> [B*64, dE]           GEMM + bias kernel
    h  = tokens·Wᵀ[:, :112];  h += U·Wᵀ[:, 112:] two GEMMs (second with beta = 1)
    h  = LN(act(h + b)) (eps from the net)      one kernel
    h  = h * mult + add                         epilogue kernel (zero bias, no act)
    x  = Ffn(h)                                 the encoder FFN block, when present
    """

    def __init__(
        self,
        ops: GpuOps,
        w: PeDenseEmbeddingWeights[int],
        s: NetShape,
        act: int,
        eps: float,
        ffn: Ffn | None,
        fusions: Fusions = NO_FUSIONS,
    ) -> None:
        self.w, self.s, self.act, self.eps, self.ffn, self.fusions = w, s, act, eps, ffn, fusions
        ops.prepare_layernorm(s.E, act)

    def forward(self, ops: GpuOps, buf: Buffers, bsz: int) -> None:
        w, s = self.w, self.s
        m = bsz * SEQ
        ops.copy_columns(buf.tokens, PLANES, 0, buf.emb_p, m, 12)
        ops.dense(buf.emb_p, bsz, SEQ * 12, w.pre_w, SEQ * s.dE, buf.emb_u)
        ops.bias_act(buf.emb_u, w.pre_b, bsz, SEQ * s.dE, ACT_NONE)
        h = buf.x1 if self.ffn is not None else buf.x
        ops.dense(buf.tokens, m, PLANES, w.w, s.E, h)
        ops.dense(buf.emb_u, m, s.dE, w.wu, s.E, h, beta=1.0)
        ops.layernorm(s.E, h, w.b, h, w.ln_g, w.ln_b, m, self.eps, self.act)
        if w.mult is not None and w.add is not None and w.zero is not None:
            ops.embed_epilogue(h, w.zero, w.mult, w.add, m, s.E, ACT_NONE)
        if self.ffn is not None:
            self.ffn.forward(ops, h, buf.ffn, buf.x, m, self.fusions.at(bsz).ln_residual)


class AttentionPolicyHead:
    """Policy embedding, Q|K projection, scaled QKᵀ logits, promotion offsets, lc0's 1858 gather."""

    def __init__(self, w: AttentionPolicyWeights[int], s: NetShape, act: int) -> None:
        self.w, self.s, self.act = w, s, act

    def forward(self, ops: GpuOps, buf: Buffers, bsz: int) -> None:
        w, s = self.w, self.s
        m = bsz * SEQ
        ops.dense(buf.x, m, s.E, w.emb_w, s.Pe, buf.ffn)
        ops.bias_act(buf.ffn, w.emb_b, m, s.Pe, self.act)
        ops.dense(buf.ffn, m, s.Pe, w.qk_w, 2 * s.Pd, buf.pol_qk)
        ops.bias_act(buf.pol_qk, w.qk_b, m, 2 * s.Pd, ACT_NONE)
        ld = 2 * s.Pd
        ops.gemm(
            SEQ,
            SEQ,
            s.Pd,
            buf.pol_qk,
            ld,
            ops.off(buf.pol_qk, s.Pd),
            ld,
            buf.pol_lg,
            SEQ,
            trans_b=True,
            alpha=1.0 / math.sqrt(s.Pd),
            batch=bsz,
            stride_a=SEQ * ld,
            stride_b=SEQ * ld,
            stride_c=SEQ * SEQ,
        )
        ops.policy_gather(
            buf.pol_lg, ops.off(buf.pol_qk, s.Pd), ld, w.promo, s.Pd, w.gather, buf.out_policy, bsz
        )


class FcHead:
    """Value or moves-left head: per-square embedding (+act), fc1 (+act), fc2 (+bias) into ``out``."""

    def __init__(
        self, w: FcHeadWeights[int], e: int, channels: int, hidden: int, n_out: int, act: int
    ) -> None:
        self.w, self.e, self.c, self.h, self.n_out, self.act = w, e, channels, hidden, n_out, act

    def forward(self, ops: GpuOps, x: int, emb: int, fc1: int, out: int, bsz: int) -> None:
        w = self.w
        m = bsz * SEQ
        ops.dense(x, m, self.e, w.emb_w, self.c, emb)
        ops.bias_act(emb, w.emb_b, m, self.c, self.act)
        ops.dense(emb, bsz, SEQ * self.c, w.fc1_w, self.h, fc1)
        ops.bias_act(fc1, w.fc1_b, bsz, self.h, self.act)
        ops.dense(fc1, bsz, self.h, w.fc2_w, self.n_out, out)
        ops.bias_act(out, w.fc2_b, bsz, self.n_out, ACT_NONE)


class ValueHead(FcHead):
    """WDL logits (3) or the classical value (1, tanh on the host) into ``out_value``."""

    def run(self, ops: GpuOps, buf: Buffers, bsz: int) -> None:
        self.forward(ops, buf.x, buf.val_v1, buf.val_v2, buf.out_value, bsz)


class MovesLeftHead(FcHead):
    """Moves left into ``out_mlh`` (its final ReLU on the host, skipped without ip2_mov_b as
    lc0's blas backend does)."""

    def run(self, ops: GpuOps, buf: Buffers, bsz: int) -> None:
        self.forward(ops, buf.x, buf.mlh_m1, buf.mlh_m2, buf.out_mlh, bsz)


class GpuModel:
    """The whole net as layers: ``forward`` runs from the uploaded planes to the output buffers."""

    #: side-stream branches ``forward`` forks (``HEADS_BRANCH``, ``SMOLGEN_BRANCH``: its events
    #: re-recorded per layer)
    SIDE_BRANCHES = 2

    def __init__(
        self,
        ops: GpuOps,
        cache: KernelCache,
        net: Network,
        w: ModelWeights[int],
        s: NetShape,
        flash: bool,
        flash_overrides: dict[str, int] | None,
        fusions: Fusions = NO_FUSIONS,
    ) -> None:
        self.s = s
        self.fusions = fusions
        act = activation_code(net.default_act)
        ffn_act = activation_code(net.ffn_act)
        alpha = float(net.alpha)
        emb, emb_w = net.embedding, w.embedding
        if isinstance(emb_w, PeDenseEmbeddingWeights):
            assert emb.ln is not None
            emb_ffn = None
            if emb_w.ffn is not None:
                assert emb.ffn_ln is not None
                emb_ffn = Ffn(ops, emb_w.ffn, s.E, s.Fe, ffn_act, alpha, emb.ffn_ln.eps)
            self.embedding: PeMapEmbedding | PeDenseEmbedding = PeDenseEmbedding(
                ops, emb_w, s, act, emb.ln.eps, emb_ffn, fusions
            )
        else:
            self.embedding = PeMapEmbedding(emb_w, s, act)
        self.attention = Attention(ops, cache, s, flash, flash_overrides)
        self.encoders: list[EncoderLayer] = []
        for i, (layer, lw) in enumerate(zip(net.encoders, w.encoders, strict=True)):
            smolgen = None
            if lw.smolgen is not None and w.smolgen_w is not None and layer.smolgen is not None:
                sg = layer.smolgen
                sg_act = activation_code(net.smolgen_act)
                eps = (sg.ln1.eps, sg.ln2.eps)
                smolgen = Smolgen(ops, lw.smolgen, w.smolgen_w, s, sg_act, eps, rows=fusions.smolgen_rows,
                                  chain=fusions.smolgen_chain, compress=fusions.smolgen_compress,
                                  dense1_rows=fusions.dense1_rows, early=fusions.smolgen_early and i > 0)
            ffn = Ffn(ops, lw.ffn, s.E, s.Fd, ffn_act, alpha, layer.ln2.eps)
            self.encoders.append(
                EncoderLayer(ops, lw, s, self.attention, smolgen, ffn, alpha, layer.ln1.eps, i, fusions)
            )
        for before, after in zip(self.encoders, self.encoders[1:], strict=False):
            before.next, after.prev = after, before
        self.policy = AttentionPolicyHead(w.policy, s, act)
        self.value = ValueHead(w.value, s.E, s.Vc, s.Vh, s.v_out, act)
        self.moves_left = (
            MovesLeftHead(w.moves_left, s.E, s.Mc, s.Mh, 1, act) if w.moves_left is not None else None
        )

    def forward(self, ops: GpuOps, buf: Buffers, bsz: int, flash: bool, tap: Tap | None = None) -> None:
        ops.expand_planes(buf.in_masks, buf.in_values, buf.tokens, bsz)
        self.embedding.forward(ops, buf, bsz)
        if tap is not None:
            tap("embedding", buf.x, self.s.E)
        for layer in self.encoders:
            layer.forward(ops, buf, bsz, flash, tap)
        ops.branch(HEADS_BRANCH, lambda: self._value_heads(ops, buf, bsz))
        self.policy.forward(ops, buf, bsz)
        ops.join(HEADS_BRANCH)

    def _value_heads(self, ops: GpuOps, buf: Buffers, bsz: int) -> None:
        self.value.run(ops, buf, bsz)
        if self.moves_left is not None:
            self.moves_left.run(ops, buf, bsz)
