"""The flash probe (lc0py/backends/gpu/flash_probe.py) without a GPU: its float64 reference is the
attention the kernel header documents, its inputs are never zeros, and it launches v1 and v2 as the
backend does (arguments, grid) on a platform that records the launch."""

from __future__ import annotations

import ctypes
import math
from typing import Any

import numpy as np

from lc0py.backends.gpu.flash_probe import LOG2E, FlashInputs, FlashRunner, attention_reference, uploaded_bias
from tests.backends.gpu.test_layers import PointerPlatform


def test_reference_is_softmax_attention_per_head() -> None:
    x = FlashInputs.random(2, 3, 16, seed=5)
    assert np.count_nonzero(x.qkv) > 0.99 * x.qkv.size and np.count_nonzero(x.g) > 0.99 * x.g.size
    got = attention_reference(x)
    dm, d = x.d_model, x.depth
    b, h, s = 1, 2, 17  # one row by hand, straight from the formula
    q = (x.qkv[b, s, h * d : (h + 1) * d].astype(np.float32) + x.bqkv[h * d : (h + 1) * d]).astype(np.float16)
    k = x.qkv[b, :, dm + h * d : dm + (h + 1) * d].astype(np.float64)
    v = x.qkv[b, :, 2 * dm + h * d : 2 * dm + (h + 1) * d].astype(np.float64)
    g = uploaded_bias(x)[b, h, s].astype(np.float64) / LOG2E
    logits = k @ q.astype(np.float64) / math.sqrt(d) + g
    p = np.exp(logits - logits.max())
    row = (p / p.sum()) @ v + x.bqkv[2 * dm + h * d : 2 * dm + (h + 1) * d].astype(np.float64)
    assert np.allclose(got[b, s, h * d : (h + 1) * d], row, rtol=1e-12, atol=1e-12)


class LaunchRecorder(PointerPlatform):
    def __init__(self) -> None:
        super().__init__()
        self.launches: list[tuple[Any, Any, int, list[Any]]] = []

    def launch(self, fn: int, grid: Any, block: Any, smem: int, stream: int, args: list[Any]) -> None:
        super().launch(fn, grid, block, smem, stream, args)
        self.launches.append((grid, block, smem, args))


def test_probe_launches_both_kernels_like_the_backend() -> None:
    plat = LaunchRecorder()
    x = FlashInputs.random(7, 24, 32, seed=3)
    run = FlashRunner(plat, x)  # type: ignore[arg-type]
    try:
        cases = (({"persistent": 0}, (1, 24, 7), 12), ({"persistent": 1}, (1, 168, 1), 13))
        for overrides, grid, nargs in cases:
            ch, launch = run.prepare(overrides)
            launch()
            got_grid, block, smem, args = plat.launches[-1]
            assert ch.kernel.value == ("flash_attention_persistent_f16" if overrides["persistent"] else
                                       "flash_attention_f16")
            assert got_grid == grid and block == (128, 1, 1) and len(args) == nargs
            assert smem == ch.params.shared_bytes(32, True, False)  # type: ignore[union-attr]
            pointers = [a.value for a in args if isinstance(a, ctypes.c_void_p)]
            assert all(plat.inside(p) for p in pointers)
            assert pointers[1] - pointers[0] == 2 * x.d_model and pointers[2] - pointers[0] == 4 * x.d_model
            assert args[3].value == 3 * x.d_model + 16  # the QKV row stride, compress columns included
            if nargs == 13:
                assert args[-1].value == 7  # the batch: the persistent grid does not carry it
    finally:
        run.close()
