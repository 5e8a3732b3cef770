"""The ``random`` backend's compiled outputs against their numpy definition (the search-only
benchmark's backend: its values decide every search there, so they must not move by a bit).
(Here rather than in ``tests/backends/``: the search-speed work may touch only ``tests/search``.)"""

from __future__ import annotations

import numpy as np
import pytest

from lc0py.backends.base import PlanesBatch
from lc0py.backends.random_backend import RandomBackend, planes_hash


def _reference_outputs(
    h: np.ndarray, table: np.ndarray, has_wdl: bool, has_ml: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    q = ((h % np.uint64(200000)).astype(np.int64) - 100000).astype(np.float32) / 100000.0
    if has_wdl:
        frac = ((h >> np.uint64(20)) % np.uint64(1000)).astype(np.float32) / 1000.0
        d = frac * (1.0 - np.abs(q))
    else:
        d = np.zeros_like(q)
    wdl = np.stack([(1.0 + q - d) / 2.0, d, (1.0 - q - d) / 2.0], axis=1).astype(np.float32)
    policy = table[(h % np.uint64(len(table))).astype(np.intp)]
    if has_ml:
        ml = (20 + (h >> np.uint64(40)) % np.uint64(80)).astype(np.float32)
    else:
        ml = np.zeros(len(h), dtype=np.float32)
    return policy, wdl, ml


@pytest.mark.parametrize("has_wdl", [True, False])
@pytest.mark.parametrize("has_ml", [True, False])
@pytest.mark.parametrize("uniform", [False, True])
def test_outputs_match_the_numpy_formulas_bit_for_bit(has_wdl: bool, has_ml: bool, uniform: bool) -> None:
    rng = np.random.default_rng(5)
    masks = rng.integers(0, 2**64, size=(300, 112), dtype=np.uint64)
    values = rng.uniform(-3, 3, size=(300, 112)).astype(np.float32)
    batch = PlanesBatch(masks, values)
    backend = RandomBackend(has_wdl=has_wdl, has_moves_left=has_ml, seed=3, uniform=uniform)
    out = backend.evaluate(batch)
    policy, wdl, ml = _reference_outputs(planes_hash(batch, 3), backend._table, has_wdl, has_ml)
    for got, want in ((out.policy, policy), (out.wdl, wdl), (out.moves_left, ml)):
        assert got.dtype == np.float32 and got.shape == want.shape
        assert got.tobytes() == want.tobytes()
    assert len(np.unique(out.wdl[:, 0])) > 250  # the hash spreads the values (the test can fail)
