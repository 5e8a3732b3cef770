"""Dirichlet noise on the root's priors (lc0's ``ApplyDirichletNoise``, lc0py/search/core/noise.py):
the exact formula for a seeded search, eps 0 = no change, the noise's mean, the cache-hit root,
and no new noise on a reused root."""

from __future__ import annotations

import numpy as np
import pytest

from lc0py.chess.core import board as B
from lc0py.search.core import noise
from lc0py.search.core.nncache import NNCache
from lc0py.search.core.numeric import prior_code, prior_value
from lc0py.search.core.tree import NodeTree
from lc0py.search.params import SearchParams
from lc0py.search.search import SearchLimits

FEN = "r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4"
ONE = SearchLimits(nodes=1, smart_pruning=False)


def _root_priors(make_search, params: SearchParams, **kw) -> dict[int, float]:  # type: ignore[no-untyped-def]
    s = make_search(FEN, params=params, limits=ONE, **kw)
    s.run()
    root = s.root
    return dict(zip(root.moves, root.p, strict=True))


def _generation_order(make_search) -> list[int]:  # type: ignore[no-untyped-def]
    s = make_search(FEN, limits=ONE)
    pos = s.worker._positions
    moves = np.empty(B.MAX_MOVES, np.uint16)
    n = B.gen_legal(pos.hist[int(pos.meta[0]) - 1], moves)
    return moves[:n].tolist()


def test_noise_follows_lc0s_formula(make_search) -> None:
    clean = _root_priors(make_search, SearchParams(overlap=False))
    eps, alpha, seed = 0.25, 0.3, 42
    noisy = _root_priors(
        make_search, SearchParams(overlap=False, noise_epsilon=eps, noise_alpha=alpha, random_seed=seed)
    )
    # the same Gamma samples, assigned in move-generation order as lc0 does before sorting
    eta = np.random.default_rng(seed).gamma(alpha, 1.0, noise.SAMPLES).astype(np.float32)
    order = _generation_order(make_search)
    total = np.float32(eta[: len(order)].sum(dtype=np.float32))
    f = np.float32
    for i, move in enumerate(order):
        p = f(clean[move]) * (f(1) - f(eps)) + f(eps) * eta[i] / total
        assert noisy[move] == prior_value(prior_code(p)), move
    assert noisy != clean
    assert sum(noisy.values()) == pytest.approx(1.0, abs=2e-3)  # 16-bit priors


def test_noisy_edges_are_sorted(make_search) -> None:
    s = make_search(FEN, params=SearchParams(overlap=False, noise_epsilon=0.5, random_seed=1), limits=ONE)
    s.run()
    p = s.root.p
    assert p == sorted(p, reverse=True)


def test_epsilon_zero_changes_nothing(make_search) -> None:
    clean = _root_priors(make_search, SearchParams(overlap=False))
    same = _root_priors(
        make_search, SearchParams(overlap=False, noise_epsilon=0.0, noise_alpha=5.0, random_seed=3)
    )
    assert same == clean


def test_noise_is_uniform_on_average(make_search) -> None:
    # E[eta_i / sum eta] = 1/n: over many seeds, the noisy prior of every move averages to
    # (1 − eps)·P + eps/n (eps = 1: the noise alone)
    clean = _root_priors(make_search, SearchParams(overlap=False))
    n = len(clean)
    runs = 200
    acc = dict.fromkeys(clean, 0.0)
    for seed in range(runs):
        params = SearchParams(overlap=False, noise_epsilon=1.0, noise_alpha=0.3, random_seed=seed)
        for move, p in _root_priors(make_search, params).items():
            acc[move] += p / runs
    # one share is Beta(0.3, 0.3·(n − 1)): standard deviation about 0.12 here, /sqrt(200)
    for move in clean:
        assert acc[move] == pytest.approx(1 / n, abs=0.03), move


def test_root_from_the_cache_gets_noise(make_search) -> None:
    cache = NNCache(10000)
    clean = _root_priors(make_search, SearchParams(overlap=False), cache=cache)
    # a new tree, the root's evaluation comes from the cache
    noisy = _root_priors(
        make_search, SearchParams(overlap=False, noise_epsilon=0.25, random_seed=9), cache=cache
    )
    assert noisy != clean
    assert sum(noisy.values()) == pytest.approx(1.0, abs=2e-3)
    uncached = _root_priors(make_search, SearchParams(overlap=False, noise_epsilon=0.25, random_seed=9))
    assert noisy == uncached  # the same noise as when the network evaluated the root


def test_reused_root_keeps_its_priors(make_search) -> None:
    tree = NodeTree()
    tree.reset_to_position(FEN, [])
    params = SearchParams(overlap=False, noise_epsilon=0.25, random_seed=5)
    first = make_search(tree=tree, params=params, limits=SearchLimits(nodes=50, smart_pruning=False))
    first.run()
    before = dict(zip(tree.root.moves, tree.root.p, strict=True))
    assert tree.reset_to_position(FEN, [])  # same game: the tree is reused
    again = make_search(
        tree=tree,
        params=SearchParams(overlap=False, noise_epsilon=0.25, random_seed=6),
        limits=SearchLimits(nodes=100, smart_pruning=False),
    )
    again.run()
    assert again.playouts > 0
    assert dict(zip(tree.root.moves, tree.root.p, strict=True)) == before


def test_noise_with_overlap_and_batches(make_search) -> None:
    # the root's evaluation travels with a batch while the next one is gathered: still noised once
    params = SearchParams(overlap=True, minibatch_size=16, noise_epsilon=0.25, random_seed=4)
    s = make_search(FEN, params=params, limits=SearchLimits(nodes=200, smart_pruning=False))
    s.run()
    s.join(60)
    ref = _root_priors(make_search, SearchParams(overlap=False, noise_epsilon=0.25, random_seed=4))
    assert dict(zip(s.root.moves, s.root.p, strict=True)) == ref
