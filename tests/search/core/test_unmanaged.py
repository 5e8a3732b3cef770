"""``core/unmanaged.py``: a tuple of arrays without numba's reference counts is the same memory
(writes through it land in the caller's arrays, shapes and dtypes kept), leaves the arrays' own
reference counts as they were, and a search that uses it takes the same decisions (the trees
against lc0 and ``scripts/compare/search_digest.py`` check that; here, the views themselves)."""

from __future__ import annotations

import sys

import numpy as np

from lc0py.search.core.arrays import TreeArrays, allocate
from lc0py.search.core.jit import njit
from lc0py.search.core.leaves import make_requests
from lc0py.search.core.unmanaged import without_refcounts


@njit
def _write_through(t: TreeArrays, node: int, visits: int) -> tuple[int, float]:
    u = without_refcounts(t)
    u.n[node] = visits
    u.wl[node] = -0.25
    u.meta[0] = node + 1
    return len(u.n), u.d.shape[0]


@njit
def _shapes(r):  # type: ignore[no-untyped-def]
    u = without_refcounts(r)
    u.masks[1, 3] = np.uint64(7)
    return u.idx.shape[0], u.idx.shape[1], u.masks.shape[1]


def test_writes_through_the_views_reach_the_callers_arrays() -> None:
    rng = np.random.default_rng(11)
    t = allocate(64, 256)
    node, visits = int(rng.integers(1, 63)), int(rng.integers(2, 1000))
    assert _write_through(t, node, visits) == (64, 64)
    assert t.n[node] == visits and t.wl[node] == -0.25 and t.meta[0] == node + 1
    assert int(t.n.sum()) == visits  # nothing else written


def test_two_dimensional_arrays_keep_their_shape_and_layout() -> None:
    req = make_requests(5)
    rows, cols, planes = _shapes(req)
    assert (rows, cols) == req.idx.shape and planes == req.masks.shape[1]
    assert req.masks[1, 3] == 7 and int(req.masks.sum()) == 7


def test_the_arrays_own_reference_counts_are_left_alone() -> None:
    t = allocate(32, 64)
    before = [sys.getrefcount(a) for a in t]
    for _ in range(50):
        _write_through(t, 3, 9)
    assert [sys.getrefcount(a) for a in t] == before
