"""The GPU backends' options record and the ``gpu=N`` device ordinal, without a GPU.

``GpuOptions.parse`` is the one place options are read: checked here for every option's parse and
its one-line refusal. ``gpu=N`` is followed from ``registry.create_backend`` to the vendor
platform's constructor (fake CUDA and HIP platforms that record pointers), and two backends on
two ordinals are fed, interleaved, from one thread: each launch must find its own device current.
"""

from __future__ import annotations

import dataclasses
import gc
import threading
from typing import Any

import numpy as np
import pytest

from lc0py.backends.gpu.options import KNOWN_OPTIONS, GpuOptions
from lc0py.backends.options import BackendOptions
from lc0py.errors import BackendOptionError
from lc0py.gpu import factory
from lc0py.gpu.platform import ordinal_error
from tests.backends.gpu.test_layers import PointerPlatform
from tests.one_line import one_line_error


def test_defaults_are_the_documented_ones() -> None:
    opts = GpuOptions.from_text("")
    assert opts == GpuOptions()
    assert (opts.flash, opts.graphs, opts.max_batch, opts.gpu, opts.verify, opts.tuned) == (
        True, True, 256, 0, False, True
    )
    assert opts.winograd is None and opts.winograd_staged is None and opts.se_gates is None  # auto
    assert opts.winograd_split and opts.flash_overrides == {}
    assert opts.graph_buckets == "fine"
    assert GpuOptions.from_text("graph_buckets=coarse").graph_buckets == "coarse"


def test_every_option_parses_once_into_a_frozen_hashable_record() -> None:
    text = (
        "flash=off,graphs=false,max_batch=1024,gpu=3,verify=on,tuned=no,winograd=on,winograd_split=off,"
        "winograd_staged=auto,se_gates=off,attn_warps=8,attn_kv_tile=32"
    )
    opts = GpuOptions.from_text(text)
    assert opts == GpuOptions(
        flash=False, graphs=False, max_batch=1024, gpu=3, verify=True, tuned=False, winograd=True,
        winograd_split=False, winograd_staged=None, se_gates=False, attn=(("kv_tile", 32), ("warps", 8)),
    )
    assert hash(opts) == hash(GpuOptions.from_text(text))  # the kernel choices may memoise on it
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.gpu = 0  # type: ignore[misc]
    merged = opts.with_flash_overrides({**{"warps": 2, "stages": 1}, **opts.flash_overrides})
    assert merged.flash_overrides == {"warps": 8, "stages": 1, "kv_tile": 32} and merged.gpu == 3


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("winograd=maybe", "--backend-opts: winograd='maybe' is not one of on, off, auto"),
        ("se_gates=2", "--backend-opts: se_gates='2' is not one of on, off, auto"),
        ("winograd_staged=yes please", "winograd_staged='yes please' is not one of on, off, auto"),
        ("flash=fast", "--backend-opts: flash='fast' is not one of on, off, auto, v1"),
        ("gpu=-1", "--backend-opts: gpu=-1 is out of range [0, "),
        ("gpu=one", "--backend-opts: gpu='one' is not an integer"),
        ("max_batch=0", "--backend-opts: max_batch=0 is out of range [1, 65536]"),
        ("graph_buckets=tiny", "--backend-opts: graph_buckets"),
        ("attn_warps=two", "--backend-opts: attn_warps='two' is not an integer"),
        (
            "winogard=on",
            "--backend-opts: unknown option(s) winogard for backend 'cuda'; did you mean winograd? "
            "(known: flash, ",
        ),
    ],
)
def test_a_bad_option_is_one_line_naming_it(text: str, line: str) -> None:
    message = one_line_error(BackendOptionError, lambda: GpuOptions.parse(BackendOptions.parse(text, "cuda")))
    assert line in message, message
    if "unknown" in line:
        assert all(name in message for name in KNOWN_OPTIONS)


def test_ordinal_error_names_the_devices_there_are() -> None:
    assert str(ordinal_error(3, 1, "CUDA")) == "gpu=3: this machine has 1 CUDA device (0)"
    assert str(ordinal_error(2, 2, "ROCm")) == "gpu=2: this machine has 2 ROCm devices (0, 1)"
    assert str(ordinal_error(9, 8, "CUDA")) == "gpu=9: this machine has 8 CUDA devices (0..7)"


class _Device(PointerPlatform):
    """A pointer-recording platform standing for device ``ordinal`` of a vendor, whose "context"
    is made current per thread (as the CUDA driver's is): every launch and copy checks it."""

    current = threading.local()

    def __init__(self, ordinal: int = 0, vendor: str = "nvidia", count: int = 2) -> None:
        super().__init__()
        if not 0 <= ordinal < count:
            raise ordinal_error(ordinal, count, "CUDA" if vendor == "nvidia" else "ROCm")
        self.vendor = vendor
        self.info = dataclasses.replace(self.info, vendor=vendor, index=ordinal)
        self.binds = 0
        self.freed_host = 0
        self.misplaced: list[str] = []
        self.bind_thread()

    def _bind_current_thread(self) -> None:
        self.binds += 1
        _Device.current.device = self

    def _where(self, what: str) -> None:
        if getattr(_Device.current, "device", None) is not self:
            self.misplaced.append(what)

    def launch(self, fn: int, grid: Any, block: Any, smem: int, stream: int, args: list[Any]) -> None:
        self._where("launch")
        super().launch(fn, grid, block, smem, stream, args)

    def copy_h2d(self, *a: Any, **k: Any) -> None:
        self._where("copy_h2d")
        super().copy_h2d(*a, **k)

    def gemm(self, *a: Any, **k: Any) -> None:
        self._where("gemm")
        super().gemm(*a, **k)

    def alloc(self, nbytes: int) -> int:
        self._where("alloc")
        return super().alloc(nbytes)

    def free_host(self, buf: Any) -> None:
        self._where("free_host")
        self.freed_host += 1
        super().free_host(buf)


@pytest.fixture
def fake_devices(monkeypatch: pytest.MonkeyPatch) -> list[_Device]:
    """Two fake devices of each vendor behind ``factory.create_platform``; returns those made."""
    from lc0py.gpu import cuda_platform, hip_platform

    made: list[_Device] = []

    def maker(vendor: str) -> Any:
        def make(device: int = 0) -> _Device:
            made.append(_Device(device, vendor))
            return made[-1]

        return make

    monkeypatch.setattr(cuda_platform, "CudaPlatform", maker("nvidia"))
    monkeypatch.setattr(hip_platform, "HipPlatform", maker("amd"))
    monkeypatch.setattr(factory, "probe", lambda vendor: None)
    monkeypatch.setenv("LC0PY_KERNEL_CACHE", "off")
    return made


@pytest.mark.parametrize(
    ("name", "vendor"),
    [("cuda", "nvidia"), ("cuda-fp16", "nvidia"), ("rocm", "amd"), ("rocm-fp16", "amd"), ("gpu", "nvidia")],
)
def test_gpu_option_reaches_the_platform(name: str, vendor: str, fake_devices: list[_Device]) -> None:
    from lc0py.backends.registry import create_backend
    from lc0py.weights.presets import random_network

    for ordinal in (1, 0):
        backend = create_backend(name, random_network("tiny", 5), f"gpu={ordinal},graphs=off")
        try:
            plat = fake_devices[-1]
            assert backend.platform is plat  # type: ignore[attr-defined]
            assert (plat.vendor, plat.info.index) == (vendor, ordinal)
            assert backend.options.gpu == ordinal  # type: ignore[attr-defined]
        finally:
            backend.close()
    with pytest.raises(BackendOptionError, match=r"^gpu=2: this machine has 2 (CUDA|ROCm) devices \(0, 1\)$"):
        create_backend(name, random_network("tiny", 5), "gpu=2")


def test_default_ordinal_is_zero(fake_devices: list[_Device]) -> None:
    from lc0py.backends.registry import create_backend
    from lc0py.weights.presets import random_network

    create_backend("cuda-fp16", random_network("tiny", 5), "graphs=off").close()
    assert fake_devices[-1].info.index == 0


def test_two_backends_on_two_ordinals_share_one_thread(fake_devices: list[_Device]) -> None:
    """Each backend owns its platform (context, streams, BLAS handles, pinned slots, kernel
    cache); fed alternately from one thread, every launch, copy and GEMM of either runs with its
    own device current (Platform.bind_thread rebinds when the other device was made current)."""
    from lc0py.backends.base import PlanesBatch
    from lc0py.backends.registry import create_backend
    from lc0py.weights.presets import random_network

    net = random_network("tiny", 5)
    first = create_backend("cuda-fp16", net, "gpu=0,max_batch=8")
    second = create_backend("cuda-fp16", net, "gpu=1,max_batch=8")
    try:
        dev0, dev1 = fake_devices
        assert (dev0.info.index, dev1.info.index) == (0, 1)
        assert first.gpu.cache is not second.gpu.cache  # type: ignore[attr-defined]
        assert first.gpu.cache.platform is dev0 and second.gpu.cache.platform is dev1  # type: ignore[attr-defined]
        rng = np.random.default_rng(7)
        for n in (3, 5, 3):
            for backend in (first, second, first):
                masks = rng.integers(1, 2**62, size=(n, 112), dtype=np.uint64)
                backend.evaluate(PlanesBatch(masks, np.ones((n, 112), np.float32)))
        assert not dev0.misplaced and not dev1.misplaced, (dev0.misplaced[:3], dev1.misplaced[:3])
        assert dev0.binds > 1 and dev1.binds > 1  # rebound after the other took the thread
        # a result outliving its backend frees its pinned buffer when collected, on whatever
        # thread and with whatever device current then: its own device is bound first
        kept = first.evaluate(PlanesBatch(masks, np.ones((n, 112), np.float32))).policy
        first.close()
        second.evaluate(PlanesBatch(masks, np.ones((n, 112), np.float32)))
        del kept
        gc.collect()
        assert dev0.freed_host >= 1 and not dev0.misplaced, dev0.misplaced[:3]
    finally:
        first.close()
        second.close()

