"""Which fused paths an attention body's forward pass takes: the policy decided once per network
(``choose_fusions``), the paths of one batch size from it per forward call (``Fusions.at``).

Each path is one ``--backend-opts`` switch (``GpuOptions``), so a device run can A/B it alone
(``scripts/device/gpu_fusion_ab``); ``on``/``off`` force it for every batch, the default (``auto``)
takes it only for the batch sizes where it measured faster:

* ``ln_residual``: the residual add after the out-projection and FFN2 GEMMs moves from the GEMM's
  epilogue (``beta = 1``: C read and rewritten by cuBLAS) into the LayerNorm kernel
  (``kernels/layernorm.hip`` reads the skip row beside the GEMM output: ``LN(y + alpha*b + x)``),
  the GEMM then runs with ``beta = 0``. The same bytes move (the GEMM no longer reads C, the
  LayerNorm reads it instead); what it changes is which cuBLAS kernel runs (at batch 256 the
  ``beta = 1`` FFN2 GEMM took 50 us against 44 us for FFN1's, the same FLOPs with ``beta = 0``:
  bench/results/2026-11-27_h100_eae3b5b/gpu_bench.log).
* ``smolgen_branch``: the smolgen compress columns come from their own GEMM (the compress rows of
  the fused QKV weight, written contiguous: no ``copy_columns``), and smolgen's dense1 -> LN ->
  dense2 -> LN run on the side stream beside the QKV GEMM. Those five latency-bound steps (~40 us
  a layer at batch 256 on an H100, 8 % of the pass) leave the critical path; the generator GEMM
  (it needs all multiprocessors) stays after the join.
* ``smolgen_rows``: at a batch of a few positions smolgen's two dense layers are GEMVs (M = the
  batch), and each with the LayerNorm after it is two latency-bound kernels (T82 on an H200: 5.1
  + 2.7 and 3.0 + 2.7 us a layer, 16.8 us with the compress GEMM: the longest path beside the QKV
  GEMM's 3.5 us at batch 1, docs/performance.md §1). ``kernels/dense_rows.hip`` does each dense
  layer, its bias, activation and LayerNorm in one launch for up to ``weights.DENSE_ROWS_MAX``
  rows (the last block to finish normalises). Measured faster at one position only (below: each
  further row adds a serial pass to the kernel), so ``auto`` takes batches of one.
* ``smolgen_compress``: smolgen's first dense layer is linear in the compressed values, so the
  compress GEMM and dense 1 + LN split by token into one kernel (``kernels/compress_rows.hip``: a
  block a token of each position, its share of every output; the last block of each position
  adds the shares and normalises). Dense 2 then runs as ``dense_rows`` where ``smolgen_rows``
  applies, else as its GEMM and LayerNorm. Faster up to 8 positions (below); every block reads
  all the compress weights, so from 16 on the L2 traffic makes it slower.
* ``smolgen_early``: where ``smolgen_compress``, ``smolgen_branch`` and ``ln_residual`` all apply, the
  side stream's chain of layer i + 1 forks as soon as layer i's FFN2 GEMM has written its output
  (into ``buf.attn``, free until layer i + 1's attention), and ``compress_rows_prenorm`` forms
  layer i's closing LayerNorm per token itself. The LayerNorm kernel, which writes the next
  layer's input for its QKV GEMM, then runs on the main stream beside the chain instead of before
  it: at one position the chain (~15 us a layer) is the critical path, the LayerNorm ~2.2 us of
  it. The first layer's chain starts after the embedding as before; the net's d_model must be at
  least its embedding width (``buf.attn`` holds the FFN output). From four positions the compress
  kernel's blocks beside the LayerNorm hold the QKV GEMM back, so ``auto`` stops at
  ``smolgen_early_max`` (3).
* ``smolgen_chain`` (off unless asked for): at a batch of a few positions the whole of smolgen's
  per-position network (compress, dense 1 + LN, dense 2 + LN: three latency-bound kernels, ~16 us
  a layer at one position on an H200) runs as one kernel whose steps are separated by grid
  barriers (``kernels/smolgen_chain.hip``, up to ``weights.SMOLGEN_CHAIN_MAX`` positions). Where it
  applies it replaces ``smolgen_rows``; the generator GEMM after it is unchanged. Its grid keeps to
  a quarter of the multiprocessors (32 blocks) so that every block is resident whatever runs
  beside it, and with 32 multiprocessors pulling dense 2's 3 MB of weights the kernel is slower
  than the kernels it replaces (below); with 96-128 blocks it would be slightly faster, but only a
  cooperative launch could promise those blocks are resident together.
* ``row_halves``: the out-projection, LayerNorm, FFN and LayerNorm of a layer run on the two
  halves of the batch, software-pipelined over the two streams: the GEMMs on the main stream, each
  half's element-wise kernels (LayerNorms, FFN bias + activation: ~70 us a layer at 256, 14 % of
  the pass, pure bandwidth) on the side stream beside the other half's GEMMs (compute-bound). The
  element-wise passes a GEMM epilogue would fold (cuBLAS has none for relu², mish, swish) are
  hidden instead of removed. Batches below ``row_halves_min`` (at least 2) run unsplit.

Measured (backendbench T82 cuda-fp16, 2 alternating rounds of 40 batches, nps ratio to every
fusion off; off's own spread 0.7 / 2.1 / 0.1 %; one H100, 2026-11-28, tree 2663f8d; the lead
commits the run's output under bench/results/2026-11-28_h100_2663f8d/)::

    batch           64      256     1024
    ln_residual     x1.061  x1.022  x0.984    auto: batches up to ln_residual_max (512)
    smolgen_branch  x1.037  x0.999  x0.968    auto: batches up to smolgen_branch_max (128)
    row_halves      x0.933  x0.986  x0.979    off unless asked for
    all three       x0.933  x0.986  x0.942

    smolgen_rows (one H200, tree 24b4deb, backendbench T82 cuda-fp16, 2 alternating rounds,
    bench/results/2026-11-28_h200-smolgen_24b4deb):
    batch           1       2       4       8
                    x1.048  x0.974  x0.876  x0.731    auto: batches up to smolgen_rows_max (1)

    smolgen_chain against smolgen_rows at 1 and the GEMMs at 2-4 (one H200, tree 5c0ca5f, 2 rounds,
    bench/results/2026-11-28_h200-chain_5c0ca5f): x0.821 at 1, x0.745 at 2, x0.570 at 4, so off.
    The kernel alone (scripts/bench/smolgen_chain_probe.py, one position): 21.8 us with 32 blocks
    (dense 2 10.2 of it), 15.7 with 96, 15.3 with 128; each grid barrier 1.1-1.6 us.

    smolgen_compress with smolgen_rows=on (one H200, tree 64697e0, kernels of a pass by CUPTI,
    bench/results/2026-11-28_h200-compress_64697e0): 0.779 against 0.787 ms at 1 position (the
    kernel 7.1 us a launch), 0.972 against 1.025 ms at 4. smolgen_rows (with it) against the GEMMs
    at 2 / 4 / 8 positions (tree 9be3d45, bench/results/2026-11-28_h200-rows_9be3d45): 0.854 /
    0.976 / 1.237 against 0.847 / 0.872 / 0.924 ms, so smolgen_rows=auto stays at one position.
    smolgen_compress on its own (tree 1cf4a62, backendbench, 2 rounds, off / on, time;
    bench/results/2026-11-28_h200-fold_1cf4a62):
    batch           1       2       4       8       16      32      64
                    x0.992  x1.058  x1.068  x1.029  x0.910  x0.836  x0.785
                                                  auto: batches up to smolgen_compress_max (8)

    smolgen_early, off -> on, device time of the captured pass (scripts/bench/graph_replay.py,
    one H200, tree 65be965, 8 alternated rounds; bench/results/2026-11-28_h200-early_20ce32c):
    batch           1       2       3       4       8
                    x1.059  x1.030  x1.014  x0.990  x0.920    auto: batches up to smolgen_early_max (3)

The batch size is the one the pass runs (with graphs: its bucket, ``weights.graph_bucket``), so
each captured graph holds its own bucket's choice; both forms of a path use the same activation
buffers (``weights.plan_buffers``), streams and events, so a network switches between them
per call at no cost.

Beside side-stream work the GEMMs keep to all but ``side_sms`` multiprocessors (cuBLAS's Hopper
GEMMs are persistent, one block a multiprocessor: on all of them the side kernels would wait for
the GEMM's end).

The decision is a pure function of the options, the net's shape and the device, like
``kernels.choose_attention`` and ``residual_kernels``; ``layers.GpuModel`` only follows it.
"""

from __future__ import annotations

from dataclasses import dataclass

from lc0py.backends.gpu.options import GpuOptions
from lc0py.backends.gpu.residual_kernels import SE_BRANCH_SMS
from lc0py.backends.gpu.weights import COMPRESS_ROWS_MAX, DENSE_ROWS_MAX, SMOLGEN_CHAIN_MAX
from lc0py.gpu.platform import DeviceInfo

#: Multiprocessors a GEMM leaves to the side-stream work beside it by default (``side_sms``): the
#: residual body's SE branch count, measured there (residual_kernels.py);
#: ``scripts/device/gpu_fusion_ab`` measures these paths' with 8, 16 and 32.
SIDE_SMS = SE_BRANCH_SMS


@dataclass(frozen=True)
class Fusions:
    """The fused paths one attention network runs (module docstring); all off is the unfused pass."""

    ln_residual: bool = False
    smolgen_branch: bool = False
    row_halves: bool = False
    smolgen_rows: bool = False
    #: the compress and dense 1 + LN as one kernel (``compress_rows``); dense 2 then by
    #: ``dense_rows`` where ``smolgen_rows`` applies, else its GEMM and LayerNorm
    smolgen_compress: bool = False
    #: smolgen's chain forked from the previous layer's FFN2 output (``compress_rows_prenorm``)
    smolgen_early: bool = False
    smolgen_chain: bool = False
    #: the largest batch ``ln_residual`` / ``smolgen_branch`` / ``smolgen_rows`` / ``smolgen_chain``
    #: take (None: every batch its kernel takes)
    ln_residual_max: int | None = None
    smolgen_branch_max: int | None = None
    smolgen_rows_max: int | None = None
    smolgen_compress_max: int | None = None
    smolgen_early_max: int | None = None
    smolgen_chain_max: int | None = None
    #: the smallest batch ``row_halves`` splits
    row_halves_min: int = 2
    #: the multiprocessor target of a GEMM with side-stream work beside it (0: all)
    gemm_sms: int = 0

    def at(self, bsz: int) -> Fusions:
        """The paths a pass of ``bsz`` positions takes: each switch on only where ``bsz`` is in
        its range, no limits left (``Fusions.at`` of the result is itself)."""
        ln = self.ln_residual and (self.ln_residual_max is None or bsz <= self.ln_residual_max)
        branch = self.smolgen_branch and (self.smolgen_branch_max is None or bsz <= self.smolgen_branch_max)
        halves = splits(self, bsz)
        # never past the most rows its kernel takes, whatever the record says
        chain = self.smolgen_chain and bsz <= _most(self.smolgen_chain_max, SMOLGEN_CHAIN_MAX)
        # the chain replaces the row kernels
        rows = not chain and self.smolgen_rows and bsz <= _most(self.smolgen_rows_max, DENSE_ROWS_MAX)
        compress_max = _most(self.smolgen_compress_max, COMPRESS_ROWS_MAX)
        compress = not chain and self.smolgen_compress and bsz <= compress_max
        early = (self.smolgen_early and compress and branch and ln and not halves
                 and (self.smolgen_early_max is None or bsz <= self.smolgen_early_max))
        return Fusions(
            ln_residual=ln,
            smolgen_branch=branch,
            row_halves=halves,
            smolgen_rows=rows,
            smolgen_compress=compress,
            smolgen_early=early,
            smolgen_chain=chain,
            gemm_sms=self.gemm_sms if branch or halves else 0,
        )

    @property
    def dense1_rows(self) -> bool:
        """Whether some batch takes ``smolgen_rows`` without ``smolgen_compress`` (dense 1 then runs
        as ``dense_rows``; its kernel is compiled only then)."""
        if not self.smolgen_rows:
            return False
        if not self.smolgen_compress:
            return True
        rows_max = _most(self.smolgen_rows_max, DENSE_ROWS_MAX)
        return rows_max > _most(self.smolgen_compress_max, COMPRESS_ROWS_MAX)

    def describe(self) -> str:
        """One line for ``-v`` logs and the device scripts."""
        names = ("ln_residual", "smolgen_branch", "smolgen_rows", "smolgen_compress", "smolgen_early",
                 "smolgen_chain", "row_halves")
        on = [name for name in names if getattr(self, name)]
        text = ", ".join(on) if on else "none"
        if self.ln_residual and self.ln_residual_max is not None:
            text += f" (ln_residual to batch {self.ln_residual_max})"
        if self.smolgen_branch and self.smolgen_branch_max is not None:
            text += f" (smolgen_branch to batch {self.smolgen_branch_max})"
        if self.smolgen_rows and self.smolgen_rows_max is not None:
            text += f" (smolgen_rows to batch {self.smolgen_rows_max})"
        if self.smolgen_compress and self.smolgen_compress_max is not None:
            text += f" (smolgen_compress to batch {self.smolgen_compress_max})"
        if self.smolgen_early and self.smolgen_early_max is not None:
            text += f" (smolgen_early to batch {self.smolgen_early_max})"
        if self.smolgen_chain and self.smolgen_chain_max is not None:
            text += f" (smolgen_chain to batch {self.smolgen_chain_max})"
        if self.row_halves and self.row_halves_min > 2:
            text += f" (row_halves from batch {self.row_halves_min})"
        if (self.smolgen_branch or self.row_halves) and self.gemm_sms:
            text += f" (GEMMs beside side-stream work on {self.gemm_sms} multiprocessors)"
        return f"fusions: {text}"


#: every fusion off: the unfused pass (the default of the layers' constructors)
NO_FUSIONS = Fusions()


def choose_fusions(options: GpuOptions, smolgen: bool, device: DeviceInfo, can_fork: bool) -> Fusions:
    """The fusions of ``options`` that apply to a net (``smolgen``: it has smolgen) on ``device``;
    ``can_fork``: the platform has a side stream (without one the side work runs inline, in an
    order that respects every dependency, and the GEMMs keep every multiprocessor). A switch left
    at ``auto`` (None) applies up to its ``*_max`` batch; ``on`` to every batch (``smolgen_rows``: to
    ``DENSE_ROWS_MAX``, ``smolgen_compress``: to ``COMPRESS_ROWS_MAX``, ``smolgen_chain``: to
    ``SMOLGEN_CHAIN_MAX``, the most their kernels take)."""
    ln = options.ln_residual is not False
    branch = options.smolgen_branch is not False and smolgen
    rows = options.smolgen_rows is not False and smolgen
    compress = options.smolgen_compress is not False and smolgen
    chain = options.smolgen_chain is not False and smolgen
    rows_max = _auto_limit(rows, options.smolgen_rows, options.smolgen_rows_max, DENSE_ROWS_MAX)
    compress_max = _auto_limit(
        compress, options.smolgen_compress, options.smolgen_compress_max, COMPRESS_ROWS_MAX
    )
    chain_max = _auto_limit(chain, options.smolgen_chain, options.smolgen_chain_max, SMOLGEN_CHAIN_MAX)
    beside = (branch or options.row_halves) and can_fork and options.side_sms > 0
    sms = max(1, device.sm_count - options.side_sms) if beside else 0
    return Fusions(
        ln_residual=ln,
        smolgen_branch=branch,
        row_halves=options.row_halves,
        ln_residual_max=options.ln_residual_max if ln and options.ln_residual is None else None,
        smolgen_branch_max=options.smolgen_branch_max if branch and options.smolgen_branch is None else None,
        smolgen_rows=rows,
        smolgen_rows_max=rows_max,
        smolgen_compress=compress,
        smolgen_compress_max=compress_max,
        smolgen_early=compress and options.smolgen_early is not False,
        smolgen_early_max=(options.smolgen_early_max
                           if compress and options.smolgen_early is None else None),
        smolgen_chain=chain,
        smolgen_chain_max=chain_max,
        row_halves_min=options.row_halves_min,
        gemm_sms=sms,
    )


def _most(limit: int | None, kernel_most: int) -> int:
    """A row kernel's batch limit: the record's (None: none) but never past what the kernel takes."""
    return min(limit or kernel_most, kernel_most)


def _auto_limit(taken: bool, switch: bool | None, auto_max: int, kernel_most: int) -> int | None:
    """The ``*_max`` a row kernel's switch records: its option at ``auto`` (``switch`` None), the
    kernel's most at ``on``, None when the fusion is not taken."""
    if not taken:
        return None
    return auto_max if switch is None else kernel_most


def splits(fusions: Fusions, bsz: int) -> bool:
    """Whether a batch of ``bsz`` positions takes the row-halves pipeline."""
    return fusions.row_halves and bsz >= max(2, fusions.row_halves_min)
