"""ONNX Runtime backends ``onnx-cpu``, ``onnx-cuda`` and ``onnx-rocm`` (lc0's names and options).

The network is exported (``export.network_to_onnx``) when the backend is created and handed to an
``onnxruntime.InferenceSession`` on the chosen execution provider. Models of nets with 2M+
parameters are cached on disk by content (``cache.py``; ``LC0PY_ONNX_CACHE=off`` disables it): a
T82 backend starts in ~1.9 s from the cached file instead of ~10 s of export + serialisation +
parsing on the shared 2-core machine (docs/performance.md).

Options (``--backend-opts``), as lc0's ONNX backends take them where lc0 has them:

* ``fp16=on|off``: float16 weights and activations (default off on CPU, on for GPUs, as lc0);
* ``threads=N``: intra-op threads (0 = ONNX Runtime's choice: one per physical core). lc0 uses
  1 on CPU because its search runs several evaluation threads; lc0py runs one batch at a time;
* ``gpu=N``: device id for CUDA/ROCm;
* ``batch=N``: fixed batch size (inputs are split and padded to it; default: variable);
* ``opset=N`` (default 17), ``attention=plain|contrib`` (export.py; default ``plain``: the two
  are equally fast on CPU; ``contrib`` is ONNX Runtime's fused attention, worth measuring on GPUs);
* ``iobinding=on|off``: bind inputs/outputs explicitly (default on for GPU providers, as lc0
  binds its CUDA I/O - not measured here, no onnxruntime-gpu is available; off on CPU, where it
  measured no gain).

As in lc0, the WDL softmax is taken on the host in float32 (the in-memory model outputs logits),
so float16 models lose no precision there.

``onnxruntime`` is imported only when a backend is created or probed: ``import lc0py`` never
imports it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from lc0py.backends.base import BackendBase, BackendInfo, NetworkOutput, PlanesBatch
from lc0py.backends.onnx import cache
from lc0py.backends.onnx.names import INPUT_PLANES, OUTPUT_MLH, OUTPUT_POLICY, OUTPUT_VALUE, OUTPUT_WDL
from lc0py.backends.options import BackendOptions
from lc0py.errors import BackendOptionError, BackendUnavailable
from lc0py.weights.network import Network

log = logging.getLogger("lc0py.backends")

INSTALL_HINT = "pip install 'lc0py[onnx]'"
KNOWN_OPTIONS = ("fp16", "threads", "gpu", "batch", "opset", "attention", "iobinding")


@dataclass(frozen=True)
class ProviderSpec:
    """Which ONNX Runtime execution providers a backend name uses, in order of preference."""

    providers: tuple[str, ...]
    device: str  # "cpu" | "gpu"
    fp16_default: bool


PROVIDERS: dict[str, ProviderSpec] = {
    "onnx-cpu": ProviderSpec(("CPUExecutionProvider",), "cpu", False),
    "onnx-cuda": ProviderSpec(("CUDAExecutionProvider",), "gpu", True),
    # ROCMExecutionProvider was removed from recent ONNX Runtime releases in favour of MIGraphX.
    "onnx-rocm": ProviderSpec(("ROCMExecutionProvider", "MIGraphXExecutionProvider"), "gpu", True),
}


def _import_ort() -> ModuleType:
    try:
        import onnxruntime
    except ImportError:
        raise BackendUnavailable(f"onnxruntime is not installed ({INSTALL_HINT})") from None
    return onnxruntime


def _provider_reason(backend: str) -> str | None:
    """``None`` if ONNX Runtime, onnx and one of ``backend``'s providers are present, else why not."""
    try:
        ort = _import_ort()
        import onnx  # noqa: F401  (the exporter needs it)
    except BackendUnavailable as exc:
        return str(exc)
    except ImportError:
        return f"the onnx package is not installed ({INSTALL_HINT})"
    available = ort.get_available_providers()
    wanted = PROVIDERS[backend].providers
    if not any(p in available for p in wanted):
        return f"onnxruntime has no {' or '.join(wanted)} (available: {', '.join(available)})"
    return None


def probe_cpu() -> str | None:
    return _provider_reason("onnx-cpu")


def probe_cuda() -> str | None:
    return _provider_reason("onnx-cuda")


def probe_rocm() -> str | None:
    return _provider_reason("onnx-rocm")


def _softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


class OnnxBackend(BackendBase):
    """One network in one ``onnxruntime.InferenceSession``; evaluates batches synchronously."""

    def __init__(
        self,
        network: Network,
        *,
        backend: str = "onnx-cpu",
        fp16: bool | None = None,
        threads: int = 0,
        gpu: int = 0,
        batch_size: int | None = None,
        opset: int | None = None,
        attention: str | None = None,
        iobinding: bool | None = None,
    ) -> None:
        if backend not in PROVIDERS:
            raise BackendUnavailable(f"unknown ONNX backend '{backend}' (available: {', '.join(PROVIDERS)})")
        ort = _import_ort()
        from lc0py.backends.onnx import export  # imports onnx

        spec = PROVIDERS[backend]
        self.name = backend
        self.is_cpu = spec.device == "cpu"  # backendbench picks its small CPU plan from this
        self.fp16 = spec.fp16_default if fp16 is None else fp16
        self.batch_size = batch_size
        self.iobinding = spec.device == "gpu" if iobinding is None else iobinding
        self._io_dtype = np.float16 if self.fp16 else np.float32
        available = ort.get_available_providers()
        provider = next((p for p in spec.providers if p in available), None)
        if provider is None:
            raise BackendUnavailable(f"onnxruntime has no {' or '.join(spec.providers)}")
        self.provider = provider

        self.attention = attention or export.DEFAULT_ATTENTION
        settings: dict[str, Any] = dict(
            fp16=self.fp16, opset=opset or export.DEFAULT_OPSET, attention=self.attention, wdl_softmax=False
        )
        options = ort.SessionOptions()
        options.log_severity_level = 3  # ORT's warnings (e.g. fp16 fallbacks) are not actionable here
        options.intra_op_num_threads = threads
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if batch_size is not None:  # the model's batch dimension stays "batch" (one cached file)
            options.add_free_dimension_override_by_name("batch", batch_size)
        provider_options: list[dict[str, Any]] = [{"device_id": gpu} if spec.device == "gpu" else {}]

        self._ort = (ort, options, provider, provider_options)
        self.cache_hit = False
        entry = cache.cache_entry(network, **settings)
        self.session: Any = None  # an onnxruntime.InferenceSession; None once closed
        path = entry.verified_path() if entry is not None else None  # hashed: a swapped file is refused
        if entry is not None and path is not None:
            try:
                self.session = self._open(str(path))
                self.cache_hit = True
            except BackendUnavailable as exc:  # verified but not loadable here: rebuild it
                entry.drop(f"onnxruntime cannot load it: {exc}")
        if self.session is None:
            try:
                data = export.network_to_onnx(network, **settings).SerializeToString()
            except ValueError as exc:
                raise BackendOptionError(f"--backend-opts: {exc}") from None
            # ONNX Runtime opens a file faster than the same bytes from memory (T82: 1.4-1.7 s vs
            # 2-3.3 s), so a freshly cached model is opened from its file.
            stored = entry.store(data) if entry is not None else None
            self.session = self._open(str(stored) if stored is not None else data)
            del data
        self._outputs = [o.name for o in self.session.get_outputs()]
        self._wdl = OUTPUT_WDL in self._outputs
        self._mlh = OUTPUT_MLH in self._outputs
        self.info = BackendInfo.of_network(
            network,
            recommended_batch=batch_size or (32 if spec.device == "cpu" else 256),
            runs_on_cpu=spec.device == "cpu",
        )

    def _open(self, model: str | bytes) -> Any:
        """An ``InferenceSession`` for a model file path or serialized bytes."""
        ort, options, provider, provider_options = self._ort
        try:
            return ort.InferenceSession(
                model, options, providers=[provider], provider_options=provider_options
            )
        except Exception as exc:  # ORT raises its own types; a failed session is "unavailable here"
            reason = _first_line(exc)
            raise BackendUnavailable(
                f"{self.name}: onnxruntime could not create a session: {reason}"
            ) from None

    def evaluate(self, batch: PlanesBatch) -> NetworkOutput:
        """``batch`` → float32 ``policy [B, 1858]``, ``wdl [B, 3]``, ``moves_left [B]``."""
        n = len(batch)
        if n == 0:
            return NetworkOutput(
                np.zeros((0, 1858), np.float32), np.zeros((0, 3), np.float32), np.zeros(0, np.float32)
            )
        planes = batch.dense(self._io_dtype)
        if self.batch_size is None:
            outs = self._run(planes)
        else:  # fixed-size model: split and zero-pad to whole batches
            step = self.batch_size
            chunks = []
            for start in range(0, n, step):
                part = planes[start : start + step]
                if len(part) < step:
                    part = np.concatenate([part, np.zeros((step - len(part), 112, 8, 8), self._io_dtype)])
                chunks.append(self._run(part))
            outs = [np.concatenate([c[i] for c in chunks])[:n] for i in range(len(self._outputs))]
        named = dict(zip(self._outputs, outs, strict=True))
        policy = named[OUTPUT_POLICY].astype(np.float32)
        if self._wdl:
            wdl = _softmax(named[OUTPUT_WDL].astype(np.float32))
        else:  # classical value head: q -> ((1 + q) / 2, 0, (1 - q) / 2)
            q = named[OUTPUT_VALUE].astype(np.float32)[:, 0]
            wdl = np.stack([(1 + q) / 2, np.zeros_like(q), (1 - q) / 2], axis=1)
        mlh = named[OUTPUT_MLH].astype(np.float32)[:, 0] if self._mlh else np.zeros(n, np.float32)
        return NetworkOutput(policy=policy, wdl=wdl.astype(np.float32), moves_left=mlh)

    def _run(self, planes: np.ndarray) -> list[np.ndarray]:
        session = self.session
        if session is None:
            raise RuntimeError(f"{self.name}: the backend was closed")
        if not self.iobinding:
            outputs: list[np.ndarray] = session.run(self._outputs, {INPUT_PLANES: planes})
            return outputs
        binding = session.io_binding()
        binding.bind_cpu_input(INPUT_PLANES, planes)
        for name in self._outputs:  # outputs land in host memory directly
            binding.bind_output(name, "cpu")
        session.run_with_iobinding(binding)
        copied: list[np.ndarray] = binding.copy_outputs_to_cpu()
        return copied

    def close(self) -> None:
        self.session = None

    def __repr__(self) -> str:
        return (
            f"OnnxBackend(backend={self.name!r}, provider={self.provider!r}, fp16={self.fp16}, "
            f"attention={self.attention!r}, batch_size={self.batch_size})"
        )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


#: Largest fixed batch (``batch=N``): lc0's own backends stop at 1024; 16384 leaves room while a
#: typo such as 1000000000 is refused here instead of failing inside ONNX Runtime's allocator.
MAX_FIXED_BATCH = 16384


def _create(network: Network, options: BackendOptions, backend: str) -> OnnxBackend:
    from lc0py.backends.onnx.export import ATTENTION_KINDS

    spec = PROVIDERS[backend]
    fp16 = options.take("fp16", spec.fp16_default)
    threads = options.take("threads", 0, hi=1024)
    gpu = options.take("gpu", 0, hi=255)
    batch = options.take("batch", 0, hi=MAX_FIXED_BATCH)
    opset = options.take("opset", 17, lo=17, hi=30)
    attention = options.take("attention", None, choices=(None, *ATTENTION_KINDS))
    iobinding = options.take("iobinding", spec.device == "gpu")
    options.finish(KNOWN_OPTIONS)
    return OnnxBackend(
        network,
        backend=backend,
        fp16=fp16,
        threads=threads,
        gpu=gpu,
        batch_size=batch or None,
        opset=opset,
        attention=attention,
        iobinding=iobinding,
    )


def create_cpu(network: Network, options: BackendOptions) -> OnnxBackend:
    """Registry factory for ``onnx-cpu``."""
    return _create(network, options, "onnx-cpu")


def create_cuda(network: Network, options: BackendOptions) -> OnnxBackend:
    """Registry factory for ``onnx-cuda``."""
    return _create(network, options, "onnx-cuda")


def create_rocm(network: Network, options: BackendOptions) -> OnnxBackend:
    """Registry factory for ``onnx-rocm``."""
    return _create(network, options, "onnx-rocm")
