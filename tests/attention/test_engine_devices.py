"""Two attention engines on two devices (``GpuAttention(device=N)``), used alternately from one
thread, without a GPU: every allocation, copy, launch and GEMM must run with its own device
current (fake devices that track the current one per thread, tests/backends/gpu/test_options.py)."""

from __future__ import annotations

import numpy as np
import pytest

from lc0py.attention.gpu import GpuAttention
from tests.backends.gpu.test_options import _Device


@pytest.mark.parametrize("impl", ["flash", "naive"])
def test_engines_on_two_devices_share_a_thread(impl: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LC0PY_KERNEL_CACHE", "off")
    dev0, dev1 = _Device(0), _Device(1)
    engines = (GpuAttention(dev0), GpuAttention(dev1))
    rng = np.random.default_rng(3)
    try:
        for engine in (engines[0], engines[1], engines[0], engines[1]):
            q = engine.to_device(rng.standard_normal((2, 4, 64, 32)))
            out = engine.attention(q, q, q, layout="bhsd", impl=impl)
            out.numpy()
            q.free()
            out.free()
    finally:
        for engine in engines:
            engine.close()
    assert dev0.launched and dev1.launched
    assert not dev0.misplaced and not dev1.misplaced, (dev0.misplaced[:3], dev1.misplaced[:3])
