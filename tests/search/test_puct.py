"""PUCT selection on hand-made trees (docs/search.md §3, §4)."""

from __future__ import annotations

import math

from lc0py.search.params import SearchParams
from lc0py.search.search import Search


def _puct_reference(parent, params: SearchParams) -> int:
    """Straightforward §3 over all edges (no prefix shortcut), first max wins."""
    n = parent.n
    cpuct = params.cpuct + params.cpuct_factor * math.log((n + params.cpuct_base) / params.cpuct_base)
    fpu = -parent.wl - params.fpu_value * math.sqrt(parent.visited_p)
    best, bi = -math.inf, -1
    for i, p in enumerate(parent.p):
        c = parent.children[i]
        cn = c.n if c else 0
        nif = c.nif if c else 0
        q = c.wl if (c and cn) else fpu
        s = q + cpuct * math.sqrt(max(n - 1, 1)) * p / (1 + cn + nif)
        if s > best:
            best, bi = s, i
    return bi


def test_unvisited_highest_prior_first(search: Search, hand_node) -> None:
    parent = hand_node([0.5, 0.3, 0.2], [])
    parent.n = 1
    assert search._select(parent, search.params, 0.0).index == 0


def test_fpu_reduction_follows_parent_value(search: Search, hand_node) -> None:
    # Edge 1 is unvisited: its Q is the parent's value minus 0.33*sqrt(visited policy).
    # child 0: 0.8 + U0 ≈ 1.018; edge 1: FPU + U1 ≈ FPU + 1.234.
    parent = hand_node([0.9, 0.1], [(50, 0, 0.8)], wl=0.0)  # FPU = 0 - 0.313
    assert search._select(parent, search.params, 0.0).index == 0
    parent = hand_node([0.9, 0.1], [(50, 0, 0.8)], wl=-0.2)  # parent better: FPU = 0.2 - 0.313
    assert search._select(parent, search.params, 0.0).index == 1


def test_fpu_absolute(make_search, hand_node) -> None:
    params = SearchParams(fpu_absolute=True, fpu_value=-1.0, overlap=False)
    s = make_search(params=params)
    parent = hand_node([0.5, 0.3, 0.2], [(3, 0, -0.2)], wl=0.0)
    # Unvisited edges are worth -1: the visited child stays best.
    assert s._select(parent, params, 0.0).index == 0


def test_visits_in_flight_divert_selection(search: Search, hand_node) -> None:
    # Equal children; in-flight visits only enlarge the denominator of U (no Q penalty).
    parent = hand_node([0.4, 0.4, 0.01], [(5, 0, 0.0), (5, 0, 0.0)])
    assert search._select(parent, search.params, 0.0).index == 0
    parent.children[0].nif = 3
    assert search._select(parent, search.params, 0.0).index == 1


def test_cpuct_grows_with_visits(make_search, hand_node) -> None:
    p = SearchParams()
    s = make_search(params=p)
    small = s._cpuct_scaled(hand_node([1.0], [(1, 0, 0.0)]), False) / math.sqrt(1)
    parent = hand_node([1.0], [(200000, 0, 0.0)])
    big = s._cpuct_scaled(parent, False) / math.sqrt(parent.n - 1)
    assert math.isclose(small, p.cpuct + p.cpuct_factor * math.log((2 + p.cpuct_base) / p.cpuct_base))
    assert big > small + 3.0  # 1.745 + 3.894*ln(1 + 200001/38739) ≈ 8.8


def test_matches_reference_on_many_trees(search: Search, hand_node) -> None:
    import random

    rng = random.Random(5)
    for _ in range(300):
        k = rng.randint(1, 30)
        raw = sorted((rng.random() for _ in range(k)), reverse=True)
        priors = [x / sum(raw) for x in raw]
        touched = rng.randint(0, k)
        stats = [
            (rng.choice([0, 0, 1, 3, 20, 500]), rng.choice([0, 0, 1, 4]), rng.uniform(-1, 1))
            for _ in range(touched)
        ]
        parent = hand_node(priors, stats, wl=rng.uniform(-1, 1))
        assert search._select(parent, search.params, 0.0).index == _puct_reference(parent, search.params)


def test_collision_budget_scaling() -> None:
    p = SearchParams()
    assert p.collision_budget(0) == 1 and p.collision_budget(28) == 1
    assert p.collision_budget(145000) == 80000
    mid = p.collision_budget(10000)
    assert 1 < mid < 80000
    assert mid == round(1 + 79999 * ((10000 - 28) / (145000 - 28)) ** 1.25)
