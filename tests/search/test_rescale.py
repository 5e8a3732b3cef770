"""lc0's WDL rescaling in the compiled core (core/rescale.py) against the float32 Python formula,
and its use in a search: every network value and cache hit is rescaled before backup, by depth."""

from __future__ import annotations

import numpy as np
import pytest

from lc0py.search.core.nncache import NNCache
from lc0py.search.core.rescale import rescale_leaf, wdl_rescale
from lc0py.search.params import SearchParams
from lc0py.search.search import SearchLimits
from lc0py.search.wdl_rescale import wdl_rescale as reference
from lc0py.search.worker import params_array


def test_compiled_rescale_matches_the_reference_formula() -> None:
    rng = np.random.default_rng()  # fresh WDLs each run
    for _ in range(400):
        w, d = rng.uniform(0.001, 0.9, 2)
        d = min(d, 0.999 - w)
        v = w - (1 - w - d)
        ratio, diff, sign = rng.uniform(0.5, 2.0), rng.uniform(-0.5, 0.5), rng.choice([-1.0, 1.0])
        _, v_ref, d_ref = reference(float(v), float(d), float(ratio), float(diff), float(sign))
        got = wdl_rescale(np.float32(v), np.float32(d), ratio, diff, sign, 1.4)
        # the reference forms W and L in double before its float32 steps, lc0 (and the core) in
        # float32: a few ulps of the logistic's input apart, amplified where D is near 0.001
        # (worst 3.0e-4 over 200,000 draws; 1e-4 failed about one run in fifty); a wrong formula
        # is off by far more than 1e-3
        assert got == pytest.approx((v_ref, d_ref), abs=1e-3)
    assert wdl_rescale(0.9999, 0.0, 2.0, 0.3, 1.0, 1.4) == pytest.approx((0.9999, 0.0))  # extreme: as is


def test_sign_follows_the_depth_and_the_favoured_side() -> None:
    params = SearchParams(wdl_rescale_ratio=1.0, wdl_rescale_diff=0.4, contempt_root_side=True)
    prm = params_array(params, root_black=False, has_mlh=False)
    v, d = 0.1, 0.5
    up = rescale_leaf(prm, 2, v, d)[0]  # a child of the root: the root's side moved into it
    down = rescale_leaf(prm, 3, v, d)[0]
    assert up > v > down
    other = params_array(SearchParams(wdl_rescale_diff=0.4, contempt_root_side=False), False, False)
    assert rescale_leaf(other, 2, v, d)[0] == pytest.approx(down)
    off = params_array(SearchParams(), False, False)
    assert rescale_leaf(off, 2, v, d) == pytest.approx((v, d))


def test_cache_hits_are_rescaled_like_network_results(make_search) -> None:
    """One node on a fresh tree is the root's evaluation: from the network the first time, from
    the NN cache the second; both must back up the same rescaled value, unlike no rescaling."""
    params = SearchParams(overlap=False, minibatch_size=1, out_of_order_eval=False, max_prefetch=0,
                          wdl_rescale_ratio=1.3, wdl_rescale_diff=0.25)
    limits = SearchLimits(nodes=1, smart_pruning=False)
    cache = NNCache(1000)
    fen = "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3"
    searches = [make_search(fen, params=params, limits=limits, cache=cache) for _ in range(2)]
    plain = SearchParams(overlap=False, minibatch_size=1, out_of_order_eval=False, max_prefetch=0)
    searches.append(make_search(fen, params=plain, limits=limits, cache=NNCache(1000)))
    for s in searches:
        s.run()
    net, hit, raw = (s.root for s in searches)
    assert net.n == hit.n == raw.n == 1 and len(cache) == 1
    assert (hit.wl, hit.d) == (net.wl, net.d)
    assert abs(net.wl - raw.wl) > 1e-4 and net.v == raw.v  # rescaled for backup; V stays raw
