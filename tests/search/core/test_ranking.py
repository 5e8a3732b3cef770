"""The best-child order (lc0's ``GetBestChildrenNoTemperature``) on random hand-made roots,
against a plain-Python statement of the rule (``core/ranking.py`` compares keys read once)."""

from __future__ import annotations

import numpy as np

from lc0py.search.core import arrays as A
from lc0py.search.core.numeric import prior_value
from lc0py.search.core.ranking import best_edge, ranked_edges

F = np.float32


def _reference(t: A.TreeArrays, root: int, draw_score: float, allowed: np.ndarray) -> tuple[list[int], int]:
    """(ranked edges, best edge) by the rule, with the algorithms ``core/ranking.py`` uses: the
    rule is not transitive across proven draws and other edges, so another sort (or taking the
    first of the ranking as the best) may order some edges differently."""
    ne = int(t.nedges[root])
    e0 = int(t.edge0[root])
    kids = [int(A.child_at(t, root, e)) for e in range(ne)]

    def rank(c: int) -> int:  # 0 terminal loss, 1 tablebase loss, 2 other, 3 tablebase win, 4 terminal win
        if c < 0 or t.n[c] == 0 or t.term[c] == 0 or t.wl[c] == 0.0:
            return 2
        if t.term[c] == A.TABLEBASE:
            return 1 if t.wl[c] < 0.0 else 3
        return 0 if t.wl[c] < 0.0 else 4

    def q(c: int) -> float:
        return float(F(t.wl[c] + np.float64(F(draw_score) * t.d[c])))

    def better(a: int, b: int) -> bool:
        ca, cb = kids[a], kids[b]
        ra, rb = rank(ca), rank(cb)
        if ra != rb:
            return ra > rb
        na = int(t.n[ca]) if ca >= 0 else 0
        nb = int(t.n[cb]) if cb >= 0 else 0
        if ra == 2 and na and nb and t.term[ca] and t.term[cb]:  # two proven draws
            tba, tbb = t.term[ca] == A.TABLEBASE, t.term[cb] == A.TABLEBASE
            return bool(tba < tbb) if tba != tbb else bool(t.m[ca] < t.m[cb])
        if ra == 2:
            if na != nb:
                return na > nb
            qa, qb = (q(ca) if na else 0.0), (q(cb) if nb else 0.0)
            if qa != qb:
                return qa > qb
            return bool(prior_value(t.ep[e0 + a]) > prior_value(t.ep[e0 + b]))
        ma, mb = float(t.m[ca]), float(t.m[cb])
        return ma < mb if ra > 2 else ma > mb

    edges = [e for e in range(ne) if not len(allowed) or allowed[e]]
    best = -1
    for e in edges:  # best_edge: the first edge no later one beats
        if best < 0 or better(e, best):
            best = e
    for i in range(1, len(edges)):  # ranked_edges: a stable insertion sort
        x, j = edges[i], i - 1
        while j >= 0 and better(x, edges[j]):
            edges[j + 1] = edges[j]
            j -= 1
        edges[j + 1] = x
    return edges, best


def test_ranking_follows_lc0s_rule_on_random_roots() -> None:
    rng = np.random.default_rng(1)
    for trial in range(300):
        t = A.allocate(64, 256)
        root = int(A.new_node(t, -1, 0))
        ne = int(rng.integers(1, 40))
        e0 = int(A.reserve_edges(t, ne))
        t.edge0[root], t.nedges[root], t.n[root] = e0, ne, 100
        t.ep[e0 : e0 + ne] = rng.integers(0, 4, ne) * 3000  # equal priors on purpose
        for i in range(ne):
            if rng.random() < 0.7:
                c = int(A.spawn_child(t, root, i))
                t.n[c] = int(rng.integers(0, 4))
                t.wl[c] = float(rng.choice([0.0, 0.5, -0.5, 1.0, -1.0]))
                t.d[c] = F(rng.choice([0.0, 0.3, 1.0]))
                t.m[c] = F(rng.integers(0, 5))
                t.term[c] = int(rng.choice([0, 0, 1, 2, 3]))
        allowed = np.zeros(0, np.uint8) if trial % 3 else (rng.random(ne) < 0.6).astype(np.uint8)
        for ds in (0.0, 0.3):
            order, best = _reference(t, root, ds, allowed)
            assert ranked_edges(t, root, ds, allowed).tolist() == order
            assert best_edge(t, root, ds, allowed) == best
