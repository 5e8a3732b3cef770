"""PUCT selection on hand-made trees (docs/search.md §3, §4; lc0's float32 formulas)."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from lc0py.search.core.numeric import cpuct, fast_log, prior_code, prior_value
from lc0py.search.params import SearchParams
from lc0py.search.worker import collisions_left
from tests.search.conftest import select_edge

F = np.float32


def _puct_reference(parent, params: SearchParams) -> int:
    """lc0's choice written out in numpy float32, first max; like lc0 the scan ends one edge
    after the first edge without visits (started or done): edges are sorted by prior."""
    n = parent.n
    cp = F(params.cpuct) + F(params.cpuct_factor) * F(
        fast_log(F(F(n) + F(params.cpuct_base)) / F(params.cpuct_base))
    )
    mult = F(float(cp) * math.sqrt(max(n - 1, 1)))
    kids = parent.children
    visited = F(0)
    for i, c in enumerate(kids):
        if c is not None and c.n > 0:
            visited += F(parent.p[i])
    fpu = -F(parent.wl) - F(params.fpu_value) * np.sqrt(visited)
    best, bi = -math.inf, -1
    exit_next = False
    for i, p in enumerate(parent.p):
        c = kids[i]
        cn = c.n if c else 0
        nif = c.nif if c else 0
        q = F(c.wl) if (c and cn) else fpu
        s = F(p) * mult / F(1 + cn + nif) + q
        if s > best:
            best, bi = s, i
        if exit_next:
            break
        if cn + nif == 0:
            exit_next = True
    return bi


def test_unvisited_highest_prior_first(hand_node) -> None:
    parent = hand_node([0.5, 0.3, 0.2], [])
    assert select_edge(parent, SearchParams()) == 0


def test_fpu_reduction_follows_parent_value(hand_node) -> None:
    # Edge 1 is unvisited: its Q is the parent's value minus 0.33*sqrt(visited policy).
    parent = hand_node([0.9, 0.1], [(50, 0, 0.8)], wl=0.0)  # FPU = 0 - 0.313
    assert select_edge(parent, SearchParams()) == 0
    parent = hand_node([0.9, 0.1], [(50, 0, 0.8)], wl=-0.2)  # parent better: FPU = 0.2 - 0.313
    assert select_edge(parent, SearchParams()) == 1


def test_fpu_absolute(hand_node) -> None:
    params = SearchParams(fpu_absolute=True, fpu_value=-1.0)
    parent = hand_node([0.5, 0.3, 0.2], [(3, 0, -0.2)], wl=0.0)
    # Unvisited edges are worth -1: the visited child stays best.
    assert select_edge(parent, params) == 0


def test_visits_in_flight_divert_selection(hand_node) -> None:
    # Equal children; in-flight visits only enlarge the denominator of U (no Q penalty).
    assert select_edge(hand_node([0.4, 0.4, 0.01], [(5, 0, 0.0), (5, 0, 0.0)]), SearchParams()) == 0
    assert select_edge(hand_node([0.4, 0.4, 0.01], [(5, 3, 0.0), (5, 0, 0.0)]), SearchParams()) == 1


def test_cpuct_grows_with_visits() -> None:
    p = SearchParams()
    small = cpuct(p.cpuct, p.cpuct_factor, p.cpuct_base, 2)
    big = cpuct(p.cpuct, p.cpuct_factor, p.cpuct_base, 200001)
    assert math.isclose(
        small, p.cpuct + p.cpuct_factor * math.log((2 + p.cpuct_base) / p.cpuct_base), rel_tol=1e-3
    )
    assert big > small + 3.0  # 1.745 + 3.894*ln(1 + 200001/38739) ≈ 8.8


def test_prior_codes_are_lc0s_16_bit_rounding() -> None:
    rng = random.Random(3)
    for _ in range(200):
        p = rng.random()
        bits = int(np.array([p], dtype=np.float32).view(np.int32)[0]) + (1 << 11) - (3 << 28)
        code = 0 if bits < 0 else (bits >> 12) & 0xFFFF
        assert prior_code(p) == code
        decoded = np.array([(code << 12) | (3 << 28)], dtype=np.int32).view(np.float32)[0]
        assert prior_value(code) == decoded
    assert prior_code(1e-12) == 0


def test_matches_reference_on_many_trees(hand_node) -> None:
    rng = random.Random(5)
    params = SearchParams()
    for _ in range(300):
        k = rng.randint(1, 30)
        raw = sorted((rng.random() for _ in range(k)), reverse=True)
        priors = [x / sum(raw) for x in raw]
        touched = rng.randint(0, k)
        stats = [
            (rng.choice([0, 0, 1, 3, 20, 500]), rng.choice([0, 0, 1, 4]), rng.uniform(-1, 1))
            for _ in range(touched)
        ]
        # a child with visits in flight but no visit yet is a leaf being evaluated: lc0 never
        # sends a second visit there, the reference would; keep such children out
        stats = [(n, nif if n else 0, wl) for n, nif, wl in stats]
        parent = hand_node(priors, stats, wl=rng.uniform(-1, 1))
        want = _puct_reference(parent, params)  # before picking changes visits in flight
        assert select_edge(parent, params) == want


def test_collision_budget_scaling() -> None:
    p = SearchParams()
    assert collisions_left(p, 0) == 1 and collisions_left(p, 28) == 1
    assert collisions_left(p, 145000) == 80000
    mid = collisions_left(p, 10000)
    assert 1 < mid < 80000
    assert abs(mid - round(1 + 79999 * ((10000 - 28) / (145000 - 28)) ** 1.25)) <= 1


def _collisions_left_numpy(p: SearchParams, nodes: float) -> int:
    """``CalculateCollisionsLeft`` in numpy float32 scalars (the definition the compiled
    ``gather.collision_budget`` must match to the last bit)."""
    start, end = p.max_collision_visits_scaling_start, p.max_collision_visits_scaling_end
    high = p.max_collision_visits
    if nodes >= end:
        return high
    if nodes <= start:
        return 1
    f = np.float32
    ratio = f(f(f(nodes) - f(start)) / f(end - start)) ** f(p.max_collision_visits_scaling_power)
    return int(math.floor(float(f(1) + f(high - 1) * f(ratio)) + 0.5))


@pytest.mark.parametrize("power", [1.25, 1.0, 0.7, 2.3])
def test_collision_budget_matches_the_float32_definition_everywhere(power: float) -> None:
    p = SearchParams(max_collision_visits_scaling_power=power)
    nodes = list(range(0, 150_001, 1 if power == 1.25 else 7)) + [0.5, 28.5, 10_000.25, float("inf")]
    assert [collisions_left(p, n) for n in nodes] == [_collisions_left_numpy(p, n) for n in nodes]


def test_edges_sort_by_prior_like_lc0s_std_sort() -> None:
    from lc0py.search.core.leaves import lc0_sort

    rng = np.random.default_rng(7)
    for n in [1, 2, 5, 16, 17, 30, 64, 218]:
        for _ in range(20):
            codes = rng.integers(0, 6, n).astype(np.uint16)  # many ties
            moves = np.arange(n, dtype=np.uint16)
            c, m = codes.copy(), moves.copy()
            lc0_sort(m, c, n)
            assert (np.diff(c.astype(np.int32)) <= 0).all()  # descending
            assert sorted(zip(m.tolist(), c.tolist(), strict=True)) == sorted(
                zip(moves.tolist(), codes.tolist(), strict=True)
            )
            if n <= 16:  # libstdc++ sorts short ranges by insertion: stable
                order = np.argsort(-codes.astype(np.int32), kind="stable")
                assert m.tolist() == moves[order].tolist()


def _std_sort_reference(mv: list[int], cd: list[int]) -> None:
    """libstdc++'s ``std::sort`` by descending code on parallel lists (plain Python: the
    two-array transliteration the compiled, packed ``lc0_sort_packed`` must reproduce)."""
    n = len(cd)

    def swap(i: int, j: int) -> None:
        mv[i], mv[j] = mv[j], mv[i]
        cd[i], cd[j] = cd[j], cd[i]

    def linear_insert(i: int) -> None:
        vm, vc = mv[i], cd[i]
        j = i - 1
        while vc > cd[j]:
            mv[j + 1], cd[j + 1] = mv[j], cd[j]
            j -= 1
        mv[j + 1], cd[j + 1] = vm, vc

    def insertion_sort(lo: int, hi: int) -> None:
        for i in range(lo + 1, hi):
            if cd[i] > cd[lo]:
                vm, vc = mv[i], cd[i]
                mv[lo + 1 : i + 1], cd[lo + 1 : i + 1] = mv[lo:i], cd[lo:i]
                mv[lo], cd[lo] = vm, vc
            else:
                linear_insert(i)

    def median_to_first(r: int, a: int, b: int, c: int) -> None:
        if cd[a] > cd[b]:
            swap(r, b if cd[b] > cd[c] else (c if cd[a] > cd[c] else a))
        else:
            swap(r, a if cd[a] > cd[c] else (c if cd[b] > cd[c] else b))

    def introsort(lo: int, hi: int, d: int) -> None:
        while hi - lo > 16:
            if d == 0:
                insertion_sort(lo, hi)
                return
            d -= 1
            median_to_first(lo, lo + 1, lo + (hi - lo) // 2, hi - 1)
            first, last = lo + 1, hi
            while True:
                while cd[first] > cd[lo]:
                    first += 1
                last -= 1
                while cd[lo] > cd[last]:
                    last -= 1
                if not first < last:
                    break
                swap(first, last)
                first += 1
            introsort(first, hi, d)
            hi = first

    introsort(0, n, 2 * (n.bit_length() - 1) if n else 0)
    if n > 16:
        insertion_sort(0, 16)
        for i in range(16, n):
            linear_insert(i)
    else:
        insertion_sort(0, n)


def test_packed_edge_sort_is_libstdcxx_std_sort_with_ties() -> None:
    from lc0py.search.core.leaves import lc0_sort

    rng = np.random.default_rng(3)
    for n in [3, 16, 17, 18, 31, 40, 64, 100, 218]:
        for trial in range(25):
            high = [2, 5, n, 60000][trial % 4]  # from nearly all equal to nearly all distinct
            codes = rng.integers(0, high, n).astype(np.uint16)
            moves = rng.permutation(4096)[:n].astype(np.uint16)
            want_m, want_c = moves.tolist(), codes.tolist()
            _std_sort_reference(want_m, want_c)
            lc0_sort(moves, codes, n)
            assert moves.tolist() == want_m and codes.tolist() == want_c
