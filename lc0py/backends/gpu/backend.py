"""The GPU backends (``cuda``, ``cuda-fp16``, ``cuda-fp8``, ``gpu``, ``rocm``, ``rocm-fp16``) on
``GpuNetwork``.

``flash``           ``on``    fused flash-attention kernel; ``off`` = GEMM+softmax fallback; ``v1`` /
                              ``v2``: the one-shot / the persistent kernel (default: v2 on sm_90)
``graphs``          ``on``    replay one captured CUDA/HIP graph per batch-size bucket
``graph_buckets``   ``fine``  ``fine``: buckets exact to 8 positions, then ~1/8 apart (32 graphs to 256);
                              ``coarse``: powers of two to 16, multiples of 16 to 256 (20 graphs)
``max_batch``       ``256``   buffers are sized for this many positions up front (grow on demand)
``gpu``             ``0``     device index
``verify``          ``off``   check the first batch against the numpy float64 reference, log errors
``tuned``           ``on``    use the flash parameters ``lc0py tune`` saved for this device, arch,
                              heads x depth and dtype (``off``: the built-in defaults)
``winograd``        ``auto``  residual nets: 3x3 convolutions as Winograd F(4x4,3x3) + batched GEMMs
                              (``auto``: on from ``WINOGRAD_MIN_FILTERS`` filters), else im2col + GEMM
``winograd_split``  ``on``    residual nets of <= 256 filters, fused Winograd step: a position's four tiles on
                              four threads (58 registers a thread, where the one-thread-per-channel kernel
                              needs 128); ``off``: that kernel. docs/performance.md §10 (log,
                              2026-11-27)
``winograd_staged`` ``auto``  residual nets, with the split step: persistent blocks that copy the next
                              position's rows into shared memory (cp.async) while computing, where its
                              stages fit (fp16 <= 256 filters on an H100); ``auto``: for batches of 1.5
                              positions per resident block or more (>= 198 on an H100)
``se_gates``        ``auto``  residual nets with SE, fused Winograd steps: the SE outside the second
                              convolution's step (the first one's step writes per-tile sums; fc1 folded
                              with the convolution is one small GEMM on them; ``se_gates`` makes the
                              gates; lc0py/backends/gpu/se_fold.py). ``auto``: for batches of 768 or more
``ln_residual``     ``auto``  attention nets: the residual add of the out-projection and FFN2 in the
                              LayerNorm kernel (GEMMs with beta = 0) instead of the GEMMs' epilogue;
                              ``auto``: for batches up to ``ln_residual_max`` (512)
``smolgen_branch``  ``auto``  attention nets with smolgen: its compress GEMM and dense/LN steps on the
                              side stream beside the QKV GEMM; ``auto``: for batches up to
                              ``smolgen_branch_max`` (128)
``row_halves``      ``off``   attention nets: the block after attention on two halves of the batch,
                              element-wise kernels beside the other half's GEMMs (``row_halves_min``)
``side_sms``        ``16``    multiprocessors a GEMM leaves to side-stream work beside it
``attn_<param>``              flash kernel parameters (``attn_warps``, ``attn_kv_tile``,
                              ``attn_stages``, ``attn_q_regs``, ``attn_min_blocks``,
                              ``attn_f32_threads``, ``attn_heads_per_block``, ``attn_persistent``, ...;
                              see ``tuning.FlashParams``)

The fusions' defaults follow one measurement (backendbench T82 cuda-fp16, nps ratio to every
fusion off; one H100, 2026-11-28, tree 2663f8d; the lead commits the run's output under
bench/results/2026-11-28_h100_2663f8d/; off's own spread 0.7 / 2.1 / 0.1 %)::

    batch           64      256     1024
    ln_residual     x1.061  x1.022  x0.984
    smolgen_branch  x1.037  x0.999  x0.968
    row_halves      x0.933  x0.986  x0.979
    all three       x0.933  x0.986  x0.942

``on``/``off`` force a fusion for every batch size (lc0py/backends/gpu/fusions.py).

Backend options (``--backend-opts``) are parsed once into a ``GpuOptions`` record
(``options.py``, which lists them); ``gpu=N`` picks the device ordinal. The backend adds a tuned
winner's flash parameters (``lc0py tune``) under the explicit ``attn_*`` ones and hands the record
to ``GpuNetwork``.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import cast

import numpy as np

from lc0py.backends.base import BackendBase, BackendInfo, NetworkOutput, PendingOutput, PlanesBatch
from lc0py.backends.gpu.options import GpuOptions
from lc0py.backends.gpu.tuning import TuneKey, load_tuned
from lc0py.backends.options import BackendOptions
from lc0py.errors import BackendUnavailable, UnsupportedNetError
from lc0py.gpu import factory
from lc0py.weights.network import Network
from lc0py.weights.residual import ResidualNetwork

log = logging.getLogger("lc0py.backends.gpu")


class GpuBackend(BackendBase):
    """A ``Backend`` running one network on one GPU (fp16 or fp32 storage)."""

    is_cpu = False

    def __init__(
        self,
        network: Network | ResidualNetwork,
        options: BackendOptions,
        *,
        fp16: bool,
        vendor: str,
        name: str,
        precision: str | None = None,
    ) -> None:
        """``precision``: the backend's own default of the ``precision`` option (``cuda-fp8``:
        ``"fp8"``); else ``fp16`` decides. An explicit ``precision=`` option wins."""
        from lc0py.backends.gpu.network import GpuNetwork

        self.name = name
        try:  # what the GPU path does not run is refused before any device work
            GpuNetwork.check_supported(network)
        except UnsupportedNetError as exc:
            raise UnsupportedNetError(f"--backend '{name}': {exc}") from None
        opts = GpuOptions.parse(options)
        if opts.precision is None and precision is not None:
            opts = replace(opts, precision=precision)
        if opts.precision is not None:
            fp16 = opts.precision != "fp32"
        if opts.fp8 and network.body != "attention":
            from lc0py.backends.gpu.fp8_residual import residual_fp8_refusal

            problem = residual_fp8_refusal(opts.fp8_scales, opts.fp8_gemms)
            if problem:
                raise UnsupportedNetError(f"--backend '{name}': {problem}")
        self.network = network
        self.platform = factory.create_platform(vendor, opts.gpu)
        if opts.fp8:
            from lc0py.backends.gpu.fp8 import fp8_refusal

            reason = fp8_refusal(self.platform.info)
            if reason:
                self.platform.close()
                raise BackendUnavailable(f"--backend '{name}': {reason}")
        self._verify = opts.verify
        self.tuned_from: str | None = None
        if opts.tuned and opts.flash and network.body == "attention":  # tuned attention kernels
            info = self.platform.info
            key = self.tune_key(info.name, info.arch, cast(Network, network), fp16)
            found = load_tuned(key)
            explicit = opts.flash_overrides
            if found is not None and explicit.get("persistent", found[0].get("persistent")) != found[0].get(
                "persistent"
            ):
                log.info("tuned parameters %s: the other flash kernel (flash=v1/v2), not used", found[1])
                found = None
            if found is not None:
                tuned, path = found
                self.tuned_from = str(path)
                opts = opts.with_flash_overrides({**tuned, **explicit})  # explicit attn_* win
        #: the options this backend runs with (a tuned winner's flash parameters merged in)
        self.options = opts
        try:
            self.gpu = GpuNetwork(self.platform, network, fp16=fp16, options=opts)
        except BaseException:
            self.platform.close()
            raise
        self.info = BackendInfo.of_network(
            network,
            recommended_batch=256,
            asynchronous=True,
        )
        choice = self.gpu.flash_choice
        log.info(
            "%s on %s (%s): attention %s (%s)%s",
            name,
            self.platform.info.name,
            self.platform.info.arch,
            choice.kernel.value,
            choice.reason,
            f"; tuned parameters from {self.tuned_from}" if self.tuned_from else "",
        )
        log.info("%s: %s", name, self.gpu.fusions.describe())

    @staticmethod
    def tune_key(device: str, arch: str, network: Network, fp16: bool) -> TuneKey:
        """The key ``lc0py tune`` saves winners under (and this backend looks them up by)."""
        return TuneKey(
            device=device,
            arch=arch,
            heads=network.heads,
            depth=network.depth,
            dtype="fp16" if fp16 else "fp32",
        )

    def prepare(self, max_batch: int) -> None:
        captured = self.gpu.prepare(max_batch)
        if captured:
            log.info("%s: captured %d graphs for batches up to %d", self.name, captured, max_batch)

    def evaluate_async(self, batch: PlanesBatch) -> PendingOutput:
        pending = self.gpu.submit(batch)
        if self._verify:
            self._verify = False
            self._check_against_reference(batch, pending.result())
        return pending

    def evaluate(self, batch: PlanesBatch) -> NetworkOutput:
        return self.evaluate_async(batch).result()

    def _check_against_reference(self, batch: PlanesBatch, out: NetworkOutput) -> None:
        from lc0py.backends.accuracy import output_errors, tolerance
        from lc0py.model import forward

        ref = forward(self.network, batch.dense(np.float64), np.float64)
        errs = output_errors(out, ref, self.network.has_moves_left)
        limit = tolerance(self.gpu.fp16, self.gpu.fp8)
        verdict = "PASS" if all(e <= limit for e in errs.values()) else "FAIL"
        log.warning(
            "verify=on (%s, first batch of %d vs numpy float64): %s -> %s (limit %g)",
            self.name,
            len(batch),
            ", ".join(f"{k} {v:.3g}" for k, v in errs.items()),
            verdict,
            limit,
        )

    def close(self) -> None:
        gpu = getattr(self, "gpu", None)
        if gpu is not None:
            gpu.close()
            self.gpu = None  # type: ignore[assignment]
            self.platform.close()


# ---- registry factories and probes ------------------------------------------------------------
def create_cuda(network: Network, options: BackendOptions) -> GpuBackend:
    return GpuBackend(network, options, fp16=False, vendor="nvidia", name="cuda")


def create_cuda_fp16(network: Network, options: BackendOptions) -> GpuBackend:
    return GpuBackend(network, options, fp16=True, vendor="nvidia", name="cuda-fp16")


def create_cuda_fp8(network: Network, options: BackendOptions) -> GpuBackend:
    return GpuBackend(network, options, fp16=True, vendor="nvidia", name="cuda-fp8", precision="fp8")


def create_gpu(network: Network, options: BackendOptions) -> GpuBackend:
    return GpuBackend(network, options, fp16=True, vendor="auto", name="gpu")


def create_rocm(network: Network, options: BackendOptions) -> GpuBackend:
    return GpuBackend(network, options, fp16=False, vendor="amd", name="rocm")


def create_rocm_fp16(network: Network, options: BackendOptions) -> GpuBackend:
    return GpuBackend(network, options, fp16=True, vendor="amd", name="rocm-fp16")


def probe_cuda() -> str | None:
    return factory.probe("nvidia")


def probe_rocm() -> str | None:
    return factory.probe("amd")


def probe_any() -> str | None:
    return factory.probe("auto")
