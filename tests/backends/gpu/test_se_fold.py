"""The SE fc1 folded onto the first convolution's per-tile sums equals fc1 of the pooled second
convolution (lc0py/backends/gpu/se_fold.py), against the numpy reference's conv2d in float64."""

from __future__ import annotations

import numpy as np
import pytest

from lc0py.backends.gpu.se_fold import STATS, fold_se_fc1, stat_masks, tap_coefficients, tile_stats
from lc0py.model.residual import conv2d
from lc0py.weights.network import Dense
from lc0py.weights.residual import Conv


def test_stat_masks_cover_each_tile() -> None:
    masks = stat_masks().reshape(4, 4, 64)
    assert masks[:, 0].sum() == 64 and (masks[:, 0].sum(axis=0) == 1).all()  # quadrants tile the board
    assert (masks[:, 1].sum(axis=1) == 4).all() and (masks[:, 2].sum(axis=1) == 4).all()
    assert (masks[:, 3].sum(axis=1) == 1).all()


def test_tap_coefficients_are_exact() -> None:
    coef = tap_coefficients()
    reach = np.round(coef @ stat_masks(), 9)  # [9, 64]
    assert set(np.unique(reach)) <= {0.0, 1.0}
    assert reach[4].sum() == 64  # the centre tap reads every square
    assert reach[0].sum() == 49 and reach[1].sum() == 56  # a corner tap loses a rank and a file
    assert reach[0].reshape(8, 8)[7].sum() == 0 and reach[0].reshape(8, 8)[:, 7].sum() == 0


@pytest.mark.parametrize("c,s", [(8, 4), (32, 8)])
def test_folded_fc1_matches_pooled_conv(c: int, s: int) -> None:
    rng = np.random.default_rng(c)
    h = rng.standard_normal((3, c, 8, 8))
    conv2 = Conv(rng.standard_normal((c, c, 3, 3)), rng.standard_normal(c))
    fc1 = Dense(rng.standard_normal((s, c)), rng.standard_normal(s))
    want = conv2d(h, conv2).reshape(3, c, 64).mean(axis=2) @ fc1.w.T + fc1.b
    wf, bf = fold_se_fc1(conv2, fc1)
    stats = tile_stats(h)
    assert stats.shape == (3, STATS, c)
    got = stats.reshape(3, STATS * c) @ wf.T + bf
    assert np.linalg.norm(got - want) / np.linalg.norm(want) < 1e-12
