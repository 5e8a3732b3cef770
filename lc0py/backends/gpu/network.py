"""One network on one GPU: weights uploaded once, the forward pass as layers, run by a runner.

``GpuNetwork(platform, network, fp16=...)`` packs the net into typed weight records
(``weights.pack_model``) and uploads them in one allocation, builds the layers (``layers.py``:
embedding, encoder layers, policy/value/moves-left heads, each with one ``forward``) on the
primitive launches of ``ops.py`` (kernels compiled through ``compile_cache.py``, cached on disk),
and hands the model to a ``runner.GpuRunner`` (buffer arena, pinned slots, graphs per batch
bucket, asynchronous results). This class only wires them and keeps the backend's API:
``submit``/``evaluate``/``evaluate_traced``, ``set_flash_overrides`` (the tuner's kernel swap),
``time_attention``.
"""

from __future__ import annotations

import numpy as np

from lc0py.backends.base import NetworkOutput, PlanesBatch
from lc0py.backends.gpu.compile_cache import KernelCache
from lc0py.backends.gpu.kernels import AttentionChoice
from lc0py.backends.gpu.layers import GpuModel
from lc0py.backends.gpu.ops import GpuOps
from lc0py.backends.gpu.platform import Platform
from lc0py.backends.gpu.runner import GpuRunner, PendingBatch
from lc0py.backends.gpu.weights import ModelWeights, arrays_of, layout, map_arrays, net_shape, pack_model
from lc0py.weights.network import Network

__all__ = ["GpuNetwork", "PendingBatch"]


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
        self.shape = net_shape(network)
        self.fp16 = fp16
        self.np_dtype = np.float16 if fp16 else np.float32
        self._closed = False
        self._w_base = 0
        self.cache = KernelCache(platform)
        self.ops = GpuOps(platform, self.cache, fp16, GpuModel.SIDE_BRANCHES)
        self.model_weights = self._upload(pack_model(network, self.np_dtype))
        self.model = GpuModel(
            self.ops, self.cache, network, self.model_weights, self.shape, flash, flash_overrides
        )
        ml = network.moves_left
        self.runner = GpuRunner(
            self.ops,
            self.model,
            self.shape,
            graphs=graphs,
            max_batch=max_batch,
            moves_left_relu=ml is not None and ml.fc2.b is not None,
        )

    def _upload(self, host: ModelWeights[np.ndarray]) -> ModelWeights[int]:
        """Copy every array of the host record into one device allocation; the same record with
        device pointers in place of the arrays."""
        arrays = arrays_of(host)
        offsets, total = layout({str(i): a.nbytes for i, a in enumerate(arrays)})
        blob = np.zeros(total, np.uint8)
        where: dict[int, int] = {}
        for i, a in enumerate(arrays):
            off = offsets[str(i)]
            blob[off : off + a.nbytes] = a.view(np.uint8).reshape(-1)
            where[id(a)] = off
        self._w_base = self.p.alloc(total)
        self.p.copy_h2d(self._w_base, blob, total, self.ops.main)
        self.p.synchronize(self.ops.main)
        self.weight_bytes = total
        return map_arrays(host, lambda a: self._w_base + where[id(a)])  # type: ignore[arg-type]

    # ---- what the backend, verify and the tuner read ---------------------------------------------
    @property
    def flash_choice(self) -> AttentionChoice:
        return self.model.attention.choice

    @property
    def uses_flash(self) -> bool:
        return self.model.attention.uses_flash

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
        return self.runner.submit(batch, flash, use_graph)

    def evaluate(self, batch: PlanesBatch, **kw: bool) -> NetworkOutput:
        return self.submit(batch, **kw).result()

    def evaluate_traced(
        self, batch: PlanesBatch, *, flash: bool
    ) -> tuple[NetworkOutput, dict[str, np.ndarray]]:
        """Outputs plus per-layer intermediates (``embedding``, ``encoder{l}.attention`` as float32
        ``[B, 64, width]``), for ``lc0py verify``; no graphs, synchronises after each tap."""
        return self.runner.evaluate_traced(batch, flash and self.uses_flash)

    def run_forward(self, bsz: int, flash: bool) -> None:
        """Enqueue one forward pass on the current buffers (benchmarks time the kernels alone)."""
        self.runner.ensure(bsz)
        self.runner.forward(bsz, flash and self.uses_flash)

    # ---- timing helpers (benchmarks) ------------------------------------------------------------
    def time_attention(self, bsz: int, flash: bool, iters: int = 50) -> float:
        """Median milliseconds of one layer's attention (flash kernel vs fallback GEMMs+softmax) on
        the current buffers (run a batch first so they hold real activations)."""
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

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self.runner.close()
        finally:
            if self._w_base:
                self.p.free(self._w_base)
                self._w_base = 0
            self.ops.close()
