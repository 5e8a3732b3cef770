"""The canonical board symmetries (docs/input-encoding.md §4): bit tricks against per-square definitions."""

from __future__ import annotations

import random

import numpy as np
import pytest

from lc0py.chess.transforms import (
    FLIP,
    LC0_032_SQUARE_MAPS,
    MIRROR,
    SQUARE_MAPS,
    TRANSPOSE,
    flip_mask,
    inverse_transform,
    lc0_032_square,
    mirror_mask,
    transform_mask,
    transform_masks,
    transpose_mask,
)


def _square(f: int, r: int) -> int:
    return 8 * r + f


def _by_definition(sq: int, t: int) -> int:
    """FLIP (f→7−f), then MIRROR (r→7−r), then TRANSPOSE ((f, r) → (7−r, 7−f))."""
    f, r = sq & 7, sq >> 3
    if t & FLIP:
        f = 7 - f
    if t & MIRROR:
        r = 7 - r
    if t & TRANSPOSE:
        f, r = 7 - r, 7 - f
    return _square(f, r)


@pytest.mark.parametrize("t", range(8))
def test_square_maps_match_definition(t: int) -> None:
    assert SQUARE_MAPS[t] == tuple(_by_definition(s, t) for s in range(64))
    assert sorted(SQUARE_MAPS[t]) == list(range(64))


def test_single_operations() -> None:
    assert flip_mask(1 << 0) == 1 << 7  # a1 -> h1
    assert mirror_mask(1 << 0) == 1 << 56  # a1 -> a8
    assert transpose_mask(1 << 7) == 1 << 7  # h1 fixed
    assert transpose_mask(1 << 56) == 1 << 56  # a8 fixed
    assert transpose_mask(1 << 0) == 1 << 63  # a1 <-> h8
    assert transpose_mask(1 << 1) == 1 << 55  # b1 (f1, r0) -> (7, 6) = h7


@pytest.mark.parametrize("t", range(8))
def test_inverse(t: int) -> None:
    inv = inverse_transform(t)
    assert all(SQUARE_MAPS[inv][SQUARE_MAPS[t][s]] == s for s in range(64))


def test_inverse_examples() -> None:
    assert inverse_transform(4) == 4
    assert inverse_transform(7) == 7
    assert inverse_transform(5) == 6


def test_vectorised_equals_scalar() -> None:
    rng = random.Random(3)
    values = [rng.getrandbits(64) for _ in range(50)] + [0, (1 << 64) - 1]
    arr = np.array(values, dtype=np.uint64)
    for t in range(8):
        got = transform_masks(arr, t)
        assert [int(x) for x in got] == [transform_mask(v, t) for v in values]


def test_all_and_empty_masks_invariant() -> None:
    for t in range(8):
        assert transform_mask(0, t) == 0
        assert transform_mask((1 << 64) - 1, t) == (1 << 64) - 1


def test_lc0_032_map_is_rotation_with_transpose() -> None:
    # Without TRANSPOSE the two maps agree; with it lc0 >= 0.32 rotates by 180° (or, with FLIP and
    # MIRROR set, TRANSPOSE adds nothing).
    for t in range(8):
        if not t & TRANSPOSE:
            assert LC0_032_SQUARE_MAPS[t] == SQUARE_MAPS[t]
        else:
            assert LC0_032_SQUARE_MAPS[t] != SQUARE_MAPS[t]
    assert lc0_032_square(_square(1, 4), 4) == _square(6, 3)  # b5 -> g4
    assert LC0_032_SQUARE_MAPS[7] == LC0_032_SQUARE_MAPS[4] == SQUARE_MAPS[FLIP | MIRROR]
