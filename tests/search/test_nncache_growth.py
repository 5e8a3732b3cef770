"""The NN cache grows on demand (issue 30 item 4): ``NNCacheSize`` is a limit, not an allocation,
and a growing cache answers every lookup exactly as one allocated whole would."""

from __future__ import annotations

import numpy as np

from lc0py.search.core import nncache as C
from lc0py.search.core.nncache import NNCache


def _whole(capacity: int) -> NNCache:
    cache = NNCache(capacity)
    cache.arrays = C.allocate(capacity)  # the old behaviour: every slot up front
    return cache


def test_the_largest_size_lc0_allows_allocates_only_the_first_slots() -> None:
    cache = NNCache(999_999_999)
    assert cache.allocated_nbytes() < 2_000_000  # was 7.45 GiB of index and slots up front
    assert cache.nbytes() > 90 * 999_999_999  # the RAM limit still counts what it may grow to
    assert len(cache) == 0 and cache.fill_permille() == 0


def test_growing_cache_matches_one_allocated_whole() -> None:
    rng = np.random.default_rng(30)
    capacity = 3 * C.INITIAL_SLOTS + 17  # grows twice, then stops at the capacity and wraps
    growing, whole = NNCache(capacity), _whole(capacity)
    keys = rng.integers(1, 2**63, size=capacity // 2, dtype=np.uint64)  # repeats: hits, replacements
    codes = rng.integers(0, 2**16, size=300, dtype=np.uint16)
    checked = 0
    for step in range(5 * capacity // 64):
        batch = rng.choice(keys, size=64)
        moves = rng.integers(1, 219, size=64)
        growing.reserve(64)
        for key, n in zip(batch, moves, strict=True):
            for cache in (growing, whole):
                C.insert(cache.arrays, np.uint64(key), 0.25, 0.5, float(n), codes, int(n))
        probe = rng.choice(keys, size=32)
        for key in probe:
            n = int(moves[0])
            a, b = C.lookup(growing.arrays, np.uint64(key), n), C.lookup(whole.arrays, np.uint64(key), n)
            assert (a >= 0) == (b >= 0), f"step {step}"
            if a >= 0:
                got, want = np.zeros(n, np.uint16), np.zeros(n, np.uint16)
                C.read_codes(growing.arrays, a, got)
                C.read_codes(whole.arrays, b, want)
                assert (got == want).all() and (growing.arrays.qdm[a] == whole.arrays.qdm[b]).all()
                checked += 1
        for key, n in zip(batch[:8], moves[:8], strict=True):
            assert C.probe_only(growing.arrays, np.uint64(key), int(n)) == C.probe_only(
                whole.arrays, np.uint64(key), int(n))
    assert checked > 0
    assert len(growing.arrays.key) == capacity  # it reached the limit and no further
    assert (growing.hits, growing.misses) == (whole.hits, whole.misses)
    assert len(growing) == len(whole) and growing.fill_permille() == whole.fill_permille()


def test_resize_and_clear_start_small_again() -> None:
    cache = NNCache(50_000)
    cache.reserve(20_000)
    assert len(cache.arrays.key) >= 20_000
    cache.clear()
    assert len(cache.arrays.key) == C.INITIAL_SLOTS
    cache.resize(100)
    assert len(cache.arrays.key) == 100 and cache.capacity == 100
    cache.reserve(10_000)
    assert len(cache.arrays.key) == 100  # never past the capacity
