"""Board symmetries of the canonical input formats (docs/input-encoding.md §4).

A transform is a bit set: ``FLIP`` (files a↔h), ``MIRROR`` (ranks 1↔8), ``TRANSPOSE`` (reflection in
the a8–h1 diagonal, h1 and a8 fixed), applied in that order. The same square map is used for the
input planes (64-bit masks) and for moves (policy indices, §6.2), so that the policy the network
learned lines up with the board it saw.

lc0 ≥ 0.32 maps *moves* differently when TRANSPOSE is set (a 180° rotation instead of the
diagonal reflection); :func:`lc0_032_square` reproduces that for comparisons only.
"""

from __future__ import annotations

import numpy as np

FLIP = 1
MIRROR = 2
TRANSPOSE = 4

ALL_SQUARES = 0xFFFF_FFFF_FFFF_FFFF


def flip_mask(v: int) -> int:
    """Reverse the bits inside each byte: file ``f`` → ``7 - f``."""
    v = ((v >> 1) & 0x5555555555555555) | ((v & 0x5555555555555555) << 1)
    v = ((v >> 2) & 0x3333333333333333) | ((v & 0x3333333333333333) << 2)
    return ((v >> 4) & 0x0F0F0F0F0F0F0F0F) | ((v & 0x0F0F0F0F0F0F0F0F) << 4)


def mirror_mask(v: int) -> int:
    """Reverse the byte order: rank ``r`` → ``7 - r`` (Black's view of the board)."""
    return int.from_bytes(v.to_bytes(8, "little"), "big")


def transpose_mask(v: int) -> int:
    """Reflect in the a8–h1 diagonal: ``(f, r)`` → ``(7 - r, 7 - f)`` (lc0 TransposeBitsInBytes)."""
    v = ((v & 0xAA00AA00AA00AA00) >> 9) | ((v & 0x0055005500550055) << 9) | (v & 0x55AA55AA55AA55AA)
    v = ((v & 0xCCCC0000CCCC0000) >> 18) | ((v & 0x0000333300003333) << 18) | (v & 0x3333CCCC3333CCCC)
    return ((v & 0xF0F0F0F000000000) >> 36) | ((v & 0x000000000F0F0F0F) << 36) | (v & 0x0F0F0F0FF0F0F0F0)


def transform_mask(v: int, transform: int) -> int:
    """Apply ``transform`` (FLIP, then MIRROR, then TRANSPOSE) to a 64-bit square mask."""
    if transform & FLIP:
        v = flip_mask(v)
    if transform & MIRROR:
        v = mirror_mask(v)
    if transform & TRANSPOSE:
        v = transpose_mask(v)
    return v


def transform_square(sq: int, transform: int) -> int:
    """The §4 square map of ``transform`` for one square (0 = a1 … 63 = h8)."""
    return SQUARE_MAPS[transform][sq]


def inverse_transform(transform: int) -> int:
    """``t⁻¹`` in the same FLIP→MIRROR→TRANSPOSE order (docs/input-encoding.md §6.2)."""
    if not transform & TRANSPOSE:
        return transform
    inv = TRANSPOSE
    if transform & FLIP:
        inv |= MIRROR
    if transform & MIRROR:
        inv |= FLIP
    return inv


def lc0_032_square(sq: int, transform: int) -> int:
    """lc0 ≥ 0.32's move square map: flip file if FLIP or TRANSPOSE, rank if MIRROR or TRANSPOSE.

    Equal to :func:`transform_square` unless TRANSPOSE is set; only for comparing with lc0.
    """
    f, r = sq & 7, sq >> 3
    if transform & (MIRROR | TRANSPOSE):
        r = 7 - r
    if transform & (FLIP | TRANSPOSE):
        f = 7 - f
    return 8 * r + f


def _square_maps() -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(transform_mask(1 << s, t).bit_length() - 1 for s in range(64)) for t in range(8))


SQUARE_MAPS: tuple[tuple[int, ...], ...] = _square_maps()
"""``SQUARE_MAPS[t][s]``: where square ``s`` goes under transform ``t``."""

LC0_032_SQUARE_MAPS: tuple[tuple[int, ...], ...] = tuple(
    tuple(lc0_032_square(s, t) for s in range(64)) for t in range(8)
)


def _byte_tables() -> np.ndarray:
    """``[8 transforms, 8 byte positions, 256]`` uint64: the image of byte value ``b`` at position ``j``.

    Every transform permutes squares, so ``transform(v) = OR_j table[t, j, byte_j(v)]``: one
    gather and one reduction transform a whole array of masks.
    """
    tables = np.zeros((8, 8, 256), dtype=np.uint64)
    for t in range(8):
        for j in range(8):
            for b in range(256):
                tables[t, j, b] = transform_mask(b << (8 * j), t)
    return tables


_BYTE_TABLES = _byte_tables()
_BYTE_POS = np.arange(8)


def transform_masks(masks: np.ndarray, transform: int) -> np.ndarray:
    """Vectorised :func:`transform_mask` over a 1-D uint64 array (returns a new array)."""
    if transform == 0:
        return masks.copy()
    as_bytes = np.ascontiguousarray(masks, dtype=np.uint64).view(np.uint8).reshape(-1, 8)
    if np.little_endian is False:  # pragma: no cover - byte j must be bits 8j..8j+7
        as_bytes = as_bytes[:, ::-1]
    gathered = _BYTE_TABLES[transform][_BYTE_POS, as_bytes]
    return np.bitwise_or.reduce(gathered, axis=1)
