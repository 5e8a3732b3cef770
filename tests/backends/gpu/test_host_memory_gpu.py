"""Host memory around real device copies (NVIDIA): what test_host_memory_lifetime.py checks on a
fake platform, on pinned memory the driver really frees.

Marked ``gpu``; the ``cuda_platform`` fixture skips without an NVIDIA GPU.
"""

from __future__ import annotations

import gc
from typing import Any

import numpy as np
import pytest

from lc0py.backends.base import PlanesBatch
from lc0py.backends.gpu.runner import PLANES
from lc0py.weights.presets import random_network

pytestmark = pytest.mark.gpu


def _batch(seed: int, n: int) -> PlanesBatch:
    rng = np.random.default_rng(seed)
    masks = rng.integers(1, 2**63, size=(n, PLANES), dtype=np.uint64)
    return PlanesBatch(masks, rng.random((n, PLANES)).astype(np.float32) + 0.5)


def _network(platform: Any, max_batch: int, graphs: bool) -> Any:
    from lc0py.backends.gpu.network import GpuNetwork
    from lc0py.backends.gpu.options import GpuOptions

    options = GpuOptions(graphs=graphs, max_batch=max_batch)
    return GpuNetwork(platform, random_network("tiny", 4), options=options)


@pytest.mark.parametrize("graphs", [True, False], ids=["graphs", "eager"])
def test_a_batch_unread_at_close_gives_the_devices_outputs(cuda_platform: Any, graphs: bool) -> None:
    """Closing with a batch in flight, then asking for its result: the outputs the device wrote
    (the same batch read before the close), not freed pinned memory or a destroyed event."""
    gpu = _network(cuda_platform, 8, graphs)
    want = gpu.submit(_batch(1, 5)).result()
    pending = gpu.submit(_batch(1, 5))
    gpu.close()
    got = pending.result()
    assert np.isfinite(got.policy).all() and np.isfinite(got.wdl).all()
    np.testing.assert_array_equal(got.policy, want.policy)
    np.testing.assert_array_equal(got.wdl, want.wdl)
    np.testing.assert_array_equal(got.moves_left, want.moves_left)


def test_kept_policies_stay_readable_through_growth_and_close(cuda_platform: Any) -> None:
    """Policies view pinned buffers of the runner's pool: kept ones stay valid and unchanged
    while the slots and the pool grow (larger batches) and after the network closes; dropping
    them frees the buffers (no error from a finalizer on a closed network)."""
    gpu = _network(cuda_platform, 2, False)
    kept = [gpu.submit(_batch(seed, n)).result() for seed, n in ((2, 2), (3, 40), (4, 300))]
    copies = [out.policy.copy() for out in kept]
    more = [gpu.submit(_batch(seed, 7)).result() for seed in range(5, 9)]
    gpu.close()
    for out, copy in zip(kept, copies, strict=True):
        np.testing.assert_array_equal(out.policy, copy)
    assert all(np.isfinite(out.policy).all() for out in more)
    del kept, more
    gc.collect()
