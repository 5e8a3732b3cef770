"""The random backend's compiled planes hash against its vectorised numpy definition."""

from __future__ import annotations

import numpy as np
import pytest

from lc0py.backends.base import PlanesBatch
from lc0py.backends.random_backend import _mix, planes_hash


def _reference_hash(batch: PlanesBatch, seed: int) -> np.ndarray:
    n = batch.masks.shape[1]
    weights = _mix(np.arange(1, 2 * n + 1, dtype=np.uint64) + np.uint64(seed & 0xFFFFFFFF))
    vals = batch.values.view(np.uint32).astype(np.uint64)
    with np.errstate(over="ignore"):
        h = (_mix(batch.masks) * weights[:n]).sum(axis=1, dtype=np.uint64)
        h = h + (_mix(vals) * weights[n:]).sum(axis=1, dtype=np.uint64)
        return _mix(h)


@pytest.mark.parametrize("rows", [1, 5, 64])
@pytest.mark.parametrize("seed", [0, 7])
def test_compiled_hash_matches_the_numpy_definition(rows: int, seed: int) -> None:
    rng = np.random.default_rng()
    masks = rng.integers(0, 2**64, size=(rows, 112), dtype=np.uint64)
    values = rng.uniform(-3, 3, size=(rows, 112)).astype(np.float32)
    batch = PlanesBatch(masks, values)
    before = masks.copy()
    got = planes_hash(batch, seed)
    assert got.dtype == np.uint64 and got.shape == (rows,)
    assert np.array_equal(got, _reference_hash(batch, seed))
    assert np.array_equal(masks, before)  # the batch is left as it was
    masks[0, 3] ^= np.uint64(1)
    assert planes_hash(batch, seed)[0] != got[0]  # one bit of one plane changes the hash


def test_per_position_delay_imitates_a_device_whose_time_grows_with_the_batch() -> None:
    """``delay_per_position_us``: the batch's device time is the fixed part plus one share per
    position, and the backend queues work asynchronously (the search overlaps its gathering)."""
    from lc0py.backends.options import BackendOptions
    from lc0py.backends.random_backend import create

    backend = create(None, BackendOptions.parse("delay_ms=1.5,delay_per_position_us=20", "random"))
    try:
        assert backend.info.asynchronous
        assert backend.device_time(0) == pytest.approx(1.5e-3)
        assert backend.device_time(256) == pytest.approx(1.5e-3 + 256 * 20e-6)
        rng = np.random.default_rng()
        masks = rng.integers(0, 2**64, size=(3, 112), dtype=np.uint64)
        batch = PlanesBatch(masks, np.ones((3, 112), np.float32))
        pending = backend.evaluate_async(batch)
        assert np.array_equal(pending.result().wdl, backend.evaluate(batch).wdl)
    finally:
        backend.close()
    plain = create(None, BackendOptions.parse("", "random"))
    assert not plain.info.asynchronous and plain.device_time(256) == 0.0
