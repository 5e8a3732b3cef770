"""One network on one GPU: weights uploaded once, the forward pass as layers, run by a runner.

``GpuNetwork(platform, network, fp16=..., options=GpuOptions(...))`` packs the net into typed
weight records (``weights.pack_model``) and uploads them in one allocation, builds the layers
(``layers.py``: embedding, encoder layers, policy/value/moves-left heads, each with one
``forward``) on the primitive launches of ``ops.py`` (kernels compiled through
``lc0py.gpu.compile_cache``, cached on disk; a residual body's kernel choices made by
``residual_kernels.py``), and hands the model to a ``runner.GpuRunner`` (buffer arena, pinned
slots, graphs per batch bucket, asynchronous results). This class only wires them and keeps the backend's API:
``submit``/``evaluate``/``evaluate_traced``, ``set_flash_overrides`` (the tuner's kernel swap),
``time_attention``.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any

import numpy as np

from lc0py.backends.base import NetworkOutput, PlanesBatch
from lc0py.backends.gpu.fusions import Fusions, choose_fusions
from lc0py.backends.gpu.kernels import AttentionChoice, AttentionKernel
from lc0py.backends.gpu.layers import GpuModel
from lc0py.backends.gpu.layers_residual import GpuResidualModel
from lc0py.backends.gpu.ops import GpuOps
from lc0py.backends.gpu.options import GpuOptions
from lc0py.backends.gpu.residual_kernels import ResidualKernels, choose_winograd, se_weights
from lc0py.backends.gpu.runner import GpuRunner, PendingBatch
from lc0py.backends.gpu.weights import (
    ModelWeights,
    NetShape,
    net_shape,
    pack_model,
    upload_record,
)
from lc0py.backends.gpu.weights_residual import (
    ResidualModelWeights,
    ResidualShape,
    pack_residual_model,
    residual_shape,
)
from lc0py.errors import BackendOptionError, UnsupportedNetError
from lc0py.gpu.compile_cache import KernelCache
from lc0py.gpu.platform import GpuError, Platform
from lc0py.weights.network import Network
from lc0py.weights.residual import ResidualNetwork

__all__ = ["GpuNetwork", "PendingBatch"]

DEFAULT_OPTIONS = GpuOptions()


def dependent_launch(options: GpuOptions, platform: Platform) -> bool:
    """Whether this network's kernels take programmatic dependent launch (``pdl=``: ``auto`` where
    the platform has it; ``on`` where it does not is one ``BackendOptionError`` line)."""
    problem = platform.dependent_launch_problem()
    if options.pdl and problem:
        raise BackendOptionError(f"--backend-opts: pdl=on: {problem}")
    return problem is None and options.pdl is not False


def gemm_tuning(options: GpuOptions, platform: Platform) -> bool:
    """Turn on the platform's timed cuBLASLt algorithms for large fp16 GEMMs (``gemm_tune=``:
    ``auto`` where the platform has them, i.e. CUDA with cuBLASLt; ``on`` elsewhere is one line).
    Returns whether they are on."""
    if options.gemm_tune is False:
        return False
    use = getattr(platform, "use_gemm_algos", None)
    problem = None
    if use is None:
        problem = f"{platform.info.name}: only the CUDA platform times cuBLASLt algorithms"
    else:
        from lc0py.backends.gpu.tuning import tuned_folder
        from lc0py.errors import BackendUnavailable

        try:
            use(options.gemm_tune_min, tuned_folder())
        except BackendUnavailable as exc:  # no cuBLASLt library
            problem = str(exc)
    if problem is not None and options.gemm_tune:
        raise BackendOptionError(f"--backend-opts: gemm_tune=on: {problem}")
    return problem is None


class GpuNetwork:
    """One network on one GPU (see the module docstring)."""

    @staticmethod
    def check_supported(network: Network | ResidualNetwork) -> None:
        """Refuse (``UnsupportedNetError``) a net the GPU path does not run, before any device work:
        a residual body whose shape it has no kernels for (the one place besides ``__init__`` that
        looks at the body)."""
        if isinstance(network, ResidualNetwork):
            residual_shape(network)

    def __init__(
        self,
        platform: Platform,
        network: Network | ResidualNetwork,
        *,
        fp16: bool = True,
        options: GpuOptions = DEFAULT_OPTIONS,
        fp8_gemms: Any = None,
    ) -> None:
        """``options``: the backend's parsed ``--backend-opts`` (flash, graphs, max_batch, the
        residual kernels' choices, flash parameters, ``precision=fp8``: the FP8 GEMMs of fp8.py);
        the defaults when built directly. ``fp8_gemms``: the FP8 GEMM provider (default: cuBLASLt
        on this platform; tests pass a recording one)."""
        self.p = platform
        platform.bind_thread()  # another device (gpu=N) may have been made current since its creation
        platform.dependent_launch = dependent_launch(options, platform)
        self.gemm_tuned = gemm_tuning(options, platform)
        self.net = network
        self.fp16 = fp16
        self.options = options
        self.np_dtype = np.float16 if fp16 else np.float32
        self.fp8 = options.fp8
        self._fp8: Any = None  # fp8.Fp8Resources (cuBLASLt, FP8 weights), closed with the network
        self.fp8_calibration: Any = None  # a residual net's fp8_calibration.Fp8Calibration, if used
        self._closed = False
        self._w_base = 0
        # One thread at a time enqueues on the streams: a graph capture is per stream, and a launch
        # from another thread while it runs fails (CUDA: "operation not permitted when stream is
        # capturing") -- e.g. a finished search's evaluation thread still submitting its last batch
        # while the next search submits its first. Waiting for results needs no lock.
        self._enqueue = threading.Lock()
        self.cache = KernelCache(platform)
        self.model: GpuModel | GpuResidualModel
        self.residual_kernels: ResidualKernels | None = None
        self.fusions = Fusions()  # an attention body's fused paths (fusions.choose_fusions)
        if isinstance(network, ResidualNetwork):
            # a classical residual (SE-ResNet) body: convolutions as im2col or Winograd + GEMMs
            wino = choose_winograd(options, network.filters, platform.info)
            if self.fp8:
                from lc0py.backends.gpu.fp8_residual import fp8_winograd_choice

                wino = fp8_winograd_choice(options, network.filters, platform.info)
            rshape = residual_shape(network, wino.winograd)
            if self.fp8:
                if not fp16:
                    raise UnsupportedNetError("FP8 keeps its activations in fp16 (fp16=True)")
                rshape = replace(rshape, fp8=True)  # its buffers in the plan
            self.shape: NetShape | ResidualShape = rshape
            self.ops = GpuOps(platform, self.cache, fp16, GpuResidualModel.SIDE_BRANCHES)
            kernels = ResidualKernels(options, platform.info, fp16, wino, platform.can_fork)
            self.residual_kernels = kernels
            # a batch makes its SE gates in the fused step or outside it (choose_se_gates): upload
            # fc1 for the one, its fold with the second convolution for the other, as they run
            fold, plain = se_weights(options, wino.fused)
            packed = pack_residual_model(network, self.np_dtype, wino.winograd, fold, plain)
            rweights = self._upload(packed)
            self.model_weights: ModelWeights[int] | ResidualModelWeights[int] = rweights
            self.model = GpuResidualModel(self.ops, network, rweights, rshape, kernels)
            if self.fp8:
                self._fp8 = self._build_residual_fp8(packed, rshape, fp8_gemms)
            ml_relu = network.moves_left is not None  # the reference's final ReLU (model/residual.py)
        else:
            shape = net_shape(network)
            if self.fp8:
                from lc0py.backends.gpu.fp8 import fp8_shape_refusal

                problem = fp8_shape_refusal(shape)
                if problem or not fp16:
                    raise UnsupportedNetError(problem or "FP8 keeps its activations in fp16 (fp16=True)")
                shape = replace(shape, fp8=True)  # its buffers in the plan
            self.shape = shape
            self.ops = GpuOps(platform, self.cache, fp16, GpuModel.SIDE_BRANCHES)
            host = pack_model(network, self.np_dtype)
            weights = self._upload(host)
            self.model_weights = weights
            self.fusions = choose_fusions(options, shape.smolgen, platform.info, platform.can_fork)
            if self.fp8:  # the FP8 layers (fp8.py) run their own pass, none of these fusions
                self.fusions = Fusions()
            self.model = GpuModel(
                self.ops, self.cache, network, weights, shape, options.flash, options.flash_overrides,
                self.fusions,
            )
            if self.fp8:
                self._fp8 = self._build_fp8(network, host, fp8_gemms)
            ml = network.moves_left
            ml_relu = ml is not None and ml.fc2.b is not None
        self.runner = GpuRunner(
            self.ops,
            self.model,
            self.shape,
            graphs=options.graphs,
            max_batch=options.max_batch,
            moves_left_relu=ml_relu,
            fine_buckets=options.graph_buckets == "fine",
        )

    def _build_fp8(self, network: Network, packed: Any, gemms: Any) -> Any:
        """The FP8 layers over the fp16 model (fp8.py); cuBLASLt unless a provider is given."""
        from lc0py.backends.gpu.fp8 import build_fp8_model, effective_fp8_scales

        if gemms is None:
            from lc0py.gpu.cublaslt import CublasLtFp8

            gemms = CublasLtFp8(self.p, fast_accum=self.options.fp8_fast_accum)
        assert isinstance(self.model, GpuModel)
        scales = effective_fp8_scales(self.options.fp8_scales, gemms)
        return build_fp8_model(
            self.model, self.ops, self.cache, network, packed, gemms, scales != "tensor", scales == "outer",
            self.options.fp8_gemms, self.options.fp8_fuse,
        )

    def _build_residual_fp8(self, packed: Any, shape: ResidualShape, gemms: Any) -> Any:
        """The tower's convolutions in FP8 (fp8_residual.py); batched cuBLASLt unless a provider is given."""
        from lc0py.backends.gpu.fp8_calibration import find_calibration
        from lc0py.backends.gpu.fp8_residual import (
            build_residual_fp8,
            calibration_applies,
            residual_per_channel,
        )

        if gemms is None:
            from lc0py.gpu.cublaslt_batched import CublasLtFp8Batched

            gemms = CublasLtFp8Batched(self.p, fast_accum=self.options.fp8_fast_accum)
        assert isinstance(self.model, GpuResidualModel)
        per_channel = residual_per_channel(self.options.fp8_scales)
        if calibration_applies(per_channel, shape.winograd):
            assert isinstance(self.net, ResidualNetwork)
            self.fp8_calibration = find_calibration(self.net)
        codes = self.fp8_calibration.weights if self.fp8_calibration is not None else None
        return build_residual_fp8(
            self.model, self.ops, self.cache, packed, shape, gemms, per_channel, codes
        )

    def _upload(self, host: Any) -> Any:
        """Copy every array of the host record into one device allocation; the same record with
        device pointers in place of the arrays."""
        record, self._w_base, self.weight_bytes = upload_record(self.p, host, self.ops.main)
        return record

    # ---- what the backend, verify and the tuner read ---------------------------------------------
    @property
    def flash_choice(self) -> AttentionChoice:
        if self.model.attention is None:
            return AttentionChoice(AttentionKernel.FALLBACK, None, "residual network: no attention body")
        return self.model.attention.choice

    @property
    def uses_flash(self) -> bool:
        return self.model.attention is not None and self.model.attention.uses_flash

    @property
    def buffer_bytes(self) -> int:
        return self.runner.buffer_bytes

    @property
    def graphs_enabled(self) -> bool:
        return self.runner.graphs_enabled

    def set_flash_overrides(self, overrides: dict[str, int]) -> AttentionChoice:
        """Rebuild the flash kernel with other run-time parameters (``FlashParams`` fields), keeping
        the weights and buffers: the tuner's inner loop costs one kernel compile, not a network
        upload. Captured graphs hold the old kernel, so they are dropped. Returns the new choice;
        if it is the fallback (invalid parameters, compile or shared-memory failure) its
        ``reason`` says why and the network runs the GEMM+softmax path."""
        if not isinstance(self.model, GpuModel):
            raise UnsupportedNetError("flash attention parameters: a residual network has no attention body")
        with self._enqueue:
            self._open()
            self.p.bind_thread()
            self.p.synchronize(self.ops.main)
            self.runner.drop_graphs()
            return self.model.attention.rebuild(overrides)

    # ---- evaluation -----------------------------------------------------------------------------
    def submit(
        self, batch: PlanesBatch, *, flash: bool | None = None, use_graph: bool | None = None
    ) -> PendingBatch:
        """Start evaluating ``batch``; returns before the device finishes."""
        flash = self.uses_flash if flash is None else (flash and self.uses_flash)
        use_graph = self.runner.graphs_enabled if use_graph is None else use_graph
        with self._enqueue:
            self._open()
            self.p.bind_thread()  # the search thread feeds a backend created on another
            return self.runner.submit(batch, flash, use_graph)

    def prepare(self, max_batch: int) -> int:
        """``GpuRunner.prepare`` for the kernel the network runs (flash or the fallback)."""
        with self._enqueue:
            self._open()
            self.p.bind_thread()
            captured = self.runner.prepare(max_batch, self.uses_flash)
            self._save_gemm_choices()  # the GEMM algorithms timed by this prepare's eager passes
            return captured

    def evaluate(self, batch: PlanesBatch, **kw: bool) -> NetworkOutput:
        return self.submit(batch, **kw).result()

    def evaluate_traced(
        self, batch: PlanesBatch, *, flash: bool
    ) -> tuple[NetworkOutput, dict[str, np.ndarray]]:
        """Outputs plus per-layer intermediates (``embedding``, ``encoder{l}.attention`` as float32
        ``[B, 64, width]``), for ``lc0py verify``; no graphs, synchronises after each tap."""
        with self._enqueue:
            self._open()
            self.p.bind_thread()
            return self.runner.evaluate_traced(batch, flash and self.uses_flash)

    def run_forward(self, bsz: int, flash: bool) -> None:
        """Enqueue one forward pass on the current buffers (benchmarks time the kernels alone)."""
        with self._enqueue:
            self._open()
            self.p.bind_thread()
            self.runner.ensure(bsz)
            self.runner.forward(bsz, flash and self.uses_flash)

    # ---- timing helpers (benchmarks) ------------------------------------------------------------
    def time_attention(self, bsz: int, flash: bool, iters: int = 50) -> float:
        """Median milliseconds of one layer's attention (flash kernel vs fallback GEMMs+softmax) on
        the current buffers (run a batch first so they hold real activations)."""
        if not isinstance(self.model, GpuModel):
            raise UnsupportedNetError("attention timing: a residual network has no attention body")
        self.p.bind_thread()
        self.runner.ensure(bsz)
        stream = self.ops.main
        start, end = self.p.create_event(timing=True), self.p.create_event(timing=True)
        times = []
        qkv_b = self.model.encoders[0].w.qkv_b
        try:
            for i in range(iters + 5):
                start.record(stream)
                self.model.attention.forward(self.runner.buf, qkv_b, bsz, flash and self.uses_flash)
                end.record(stream)
                end.synchronize()
                if i >= 5:
                    times.append(start.elapsed_ms(end))
        finally:
            self.p.destroy_event(start)
            self.p.destroy_event(end)
        return float(np.median(times))

    def _save_gemm_choices(self) -> None:
        """Write the GEMM algorithms timed so far to the tuned folder (``gemm_algos.AlgoStore``;
        one write, nothing when none is new). A cache never fails the network: a failed write is
        logged by the store, and a platform whose tuning is already closed has nothing to write."""
        algos = getattr(self.p, "gemm_algos", None) if self.gemm_tuned else None
        if algos is not None:
            algos.flush()

    def _open(self) -> None:
        """Refuse work once closed (called holding ``_enqueue``): the slots and buffers are gone."""
        if self._closed:
            raise GpuError("GPU network already closed")

    def close(self) -> None:
        # Under the enqueue lock: a submit still running on another thread (a finished search's
        # evaluation thread) writes the pinned slots and enqueues copies of them; freeing them
        # under it would hand the device and that thread freed memory.
        with self._enqueue:
            if self._closed:
                return
            self._closed = True
            self.p.bind_thread()
            try:
                self.runner.close()
            finally:
                self._save_gemm_choices()  # timed since the last prepare (an eager batch)
                if self._w_base:
                    self.p.free(self._w_base)
                    self._w_base = 0
                if self._fp8 is not None:
                    self._fp8.close()
                    self._fp8 = None
                self.ops.close()
