"""Which kernel modules the GPU backend really builds on an AMD device: ``GpuNetwork`` is
constructed on a recording ``Platform`` (an AMD device that compiles nothing and runs nothing),
and every ``compile(source, options)`` call it makes is collected.

So the AMD compile test (test_compile_amd.py) compiles exactly the parameter sets the backend
asks hiprtc for -- head depths 32/64/96/128 (T82 with 24/12/8/6 heads), fp16 and fp32, each
smolgen LayerNorm width and activation, the fallback softmax where flash does not fit, the
residual-body kernels (res-tiny, res-20x256: im2col, SE/skip, the policy gather) -- and
follows network.py/kernels.py/tuning.py when they change instead of duplicating their logic.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Sequence
from functools import cache
from typing import Any

from lc0py.gpu.platform import DeviceInfo, Event, HostBuffer, Platform

# head depth 32, 64, 96, 128 at D = 768; residual (SE-ResNet) bodies: residual.hip + gather_bias
PRESETS = ("t82", "t82-h12", "t82-h8", "t82-h6", "res-tiny", "res-20x256")
LDS_BYTES = 64 * 1024  # per workgroup on gfx9 (CDNA) and gfx11/gfx12


class RecordingPlatform(Platform):
    """An AMD device of ``arch``/``warp_size`` that records compiles and does nothing else."""

    vendor = "amd"
    binary_kind = "hsaco"

    def __init__(self, arch: str, warp_size: int) -> None:
        self.info = DeviceInfo("amd", 0, "recording", arch, 96, warp_size, LDS_BYTES, LDS_BYTES, 1 << 34)
        self.compiles: list[tuple[str, tuple[str, ...]]] = []
        self._next = 0x1000
        self._host: list[Any] = []

    def _handle(self) -> int:
        self._next += 0x100
        return self._next

    def compile(self, source: str, name: str, options: Sequence[str], headers: dict[str, str]) -> bytes:
        self.compiles.append((name, tuple(options)))
        return repr((name, tuple(options))).encode()

    def alloc_host(self, nbytes: int) -> HostBuffer:
        buf = ctypes.create_string_buffer(max(nbytes, 1))
        self._host.append(buf)
        return HostBuffer(ctypes.addressof(buf), nbytes)

    def create_event(self, timing: bool = False) -> Event:
        return Event(self._handle(), self)

    def stream_wait_event(self, stream: int, event: int) -> None:  # a two-stream platform, like HIP's
        pass

    def compiler_version(self) -> str:
        return "recording"

    def event_query(self, event: int) -> bool:
        return True

    def event_elapsed_ms(self, start: int, end: int) -> float:
        return 0.0

    def alloc(self, nbytes: int) -> int:
        return self._handle()

    def create_stream(self) -> int:
        return self._handle()

    def load_module(self, binary: bytes) -> int:
        return self._handle()

    def get_function(self, module: int, name: str) -> int:
        return self._handle()

    def end_capture(self, stream: int) -> int:
        return self._handle()

    # Everything else is a no-op on this device.
    def free(self, ptr: int) -> None: ...
    def free_host(self, buf: HostBuffer) -> None: ...
    def copy_h2d(self, dst: int, src: Any, nbytes: int, stream: int) -> None: ...
    def copy_d2h(self, dst: Any, src: int, nbytes: int, stream: int) -> None: ...
    def copy_d2d(self, dst: int, src: int, nbytes: int, stream: int) -> None: ...
    def memset(self, ptr: int, byte: int, nbytes: int, stream: int) -> None: ...
    def destroy_stream(self, stream: int) -> None: ...
    def synchronize(self, stream: int | None = None) -> None: ...
    def destroy_event(self, event: Event) -> None: ...
    def event_record(self, event: int, stream: int) -> None: ...
    def event_synchronize(self, event: int) -> None: ...
    def set_max_dynamic_shared(self, function: int, nbytes: int) -> None: ...
    def launch(self, *args: Any, **kwargs: Any) -> None: ...
    def gemm(self, *args: Any, **kwargs: Any) -> None: ...
    def begin_capture(self, stream: int) -> None: ...
    def launch_graph(self, graph: int, stream: int) -> None: ...
    def destroy_graph(self, graph: int) -> None: ...
    def close(self) -> None: ...


@cache
def backend_compiles(arch: str, warp_size: int) -> list[tuple[str, tuple[str, ...]]]:
    """Sorted, distinct ``(source, options)`` GpuNetwork compiles on ``arch`` for the presets."""
    from lc0py.backends.gpu.network import GpuNetwork
    from lc0py.backends.gpu.options import GpuOptions

    saved = os.environ.get("LC0PY_KERNEL_CACHE")
    os.environ["LC0PY_KERNEL_CACHE"] = "off"  # every module must reach compile()
    try:
        seen: set[tuple[str, tuple[str, ...]]] = set()
        for preset in PRESETS:
            net = _network(preset)
            for fp16 in (True, False):
                rec = RecordingPlatform(arch, warp_size)
                # the backend's defaults (winograd=auto, se_gates=auto): res-20x256's fused steps and
                # their LC0_SE_OUTSIDE build
                GpuNetwork(rec, net, fp16=fp16, options=GpuOptions(graphs=False, max_batch=1)).close()
                seen.update(rec.compiles)
        return sorted(seen)
    finally:
        if saved is None:
            os.environ.pop("LC0PY_KERNEL_CACHE", None)
        else:
            os.environ["LC0PY_KERNEL_CACHE"] = saved


@cache
def _network(preset: str) -> Any:
    from lc0py.weights.presets import random_network

    if preset.startswith("res-"):
        return random_network(preset, 0, blocks=1)
    return random_network(preset, 0, layers=1)


def job_id(source: str, options: Sequence[str]) -> str:
    """A readable pytest id: ``flash-d64-fp16``, ``layernorm-n768-act3-fp16``, ``elementwise-fp32``."""
    d = dict(o[2:].split("=", 1) for o in options if o.startswith("-D") and "=" in o)
    dt = "fp16" if d.get("LC0_FP16", "1") == "1" else "fp32"
    stem = source.removesuffix(".hip")
    if stem == "flash_attention":
        return f"flash-d{d.get('LC0_FA_DEPTH')}-{dt}"
    if stem == "layernorm":
        return f"layernorm-n{d.get('LC0_LN_N')}-act{d.get('LC0_LN_ACT', '-')}-{dt}"
    if stem == "softmax_bias":
        return f"softmax_bias-per{d.get('LC0_SM_PER')}-{dt}"
    return f"{stem}-{dt}"
