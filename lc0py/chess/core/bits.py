"""Bit operations on uint64 bitboards for the compiled core: lowest/highest set bit, byte swap
(the side-to-move mirror), population count, and the square tables the move generator reads.

numba pitfall kept out of every caller: mixing ``uint64`` with a signed ``int64`` in arithmetic
gives ``float64``; every constant here is a ``np.uint64`` and bit indices are converted with
``np.uint64`` before they meet a bitboard.
"""

from __future__ import annotations

import numba
import numpy as np

from lc0py.chess.core.jit import njit

U0 = np.uint64(0)
U1 = np.uint64(1)
ALL = np.uint64(0xFFFF_FFFF_FFFF_FFFF)
RANK_1 = np.uint64(0xFF)
RANK_8 = np.uint64(0xFF << 56)

if numba.config.DISABLE_JIT:  # pragma: no cover - debugging mode, plain Python

    def lsb(b: np.uint64) -> int:
        """Index of the lowest set bit (b != 0)."""
        v = int(b)
        return (v & -v).bit_length() - 1

    def msb(b: np.uint64) -> int:
        """Index of the highest set bit (b != 0)."""
        return int(b).bit_length() - 1

else:
    from numba.cpython.unsafe.numbers import leading_zeros, trailing_zeros

    @njit
    def lsb(b: np.uint64) -> int:
        """Index of the lowest set bit (b != 0): one ``tzcnt``."""
        return int(trailing_zeros(b))

    @njit
    def msb(b: np.uint64) -> int:
        """Index of the highest set bit (b != 0): one ``lzcnt``."""
        return 63 - int(leading_zeros(b))


@njit
def bb(sq: int) -> np.uint64:
    """The bitboard of one square."""
    return U1 << np.uint64(sq)


@njit
def bswap(v: np.uint64) -> np.uint64:
    """Reverse the byte order: rank r → 7 − r (the side-to-move mirror, lc0's ``Mirror``)."""
    v = ((v >> np.uint64(8)) & np.uint64(0x00FF00FF00FF00FF)) | (
        (v & np.uint64(0x00FF00FF00FF00FF)) << np.uint64(8)
    )
    v = ((v >> np.uint64(16)) & np.uint64(0x0000FFFF0000FFFF)) | (
        (v & np.uint64(0x0000FFFF0000FFFF)) << np.uint64(16)
    )
    return (v >> np.uint64(32)) | (v << np.uint64(32))


@njit
def popcount(v: np.uint64) -> int:
    """Number of set bits (SWAR)."""
    v = v - ((v >> np.uint64(1)) & np.uint64(0x5555555555555555))
    v = (v & np.uint64(0x3333333333333333)) + ((v >> np.uint64(2)) & np.uint64(0x3333333333333333))
    v = (v + (v >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return int((v * np.uint64(0x0101010101010101)) >> np.uint64(56))


@njit
def more_than_one(v: np.uint64) -> bool:
    return (v & (v - U1)) != U0


# --- square tables (built once in Python; numba freezes module-level arrays as constants) -------

# Directions: 0..3 go to higher squares (N, E, NE, NW), 4..7 to lower ones (S, W, SW, SE).
_DIRS = ((0, 1), (1, 0), (1, 1), (-1, 1), (0, -1), (-1, 0), (-1, -1), (1, -1))  # (file, rank) steps


def _walk(sq: int, df: int, dr: int) -> list[int]:
    f, r = sq & 7, sq >> 3
    out: list[int] = []
    while True:
        f, r = f + df, r + dr
        if not (0 <= f < 8 and 0 <= r < 8):
            return out
        out.append(8 * r + f)


def _mask(squares) -> int:
    m = 0
    for s in squares:
        m |= 1 << s
    return m


def _leaper(deltas) -> np.ndarray:
    out = np.zeros(64, dtype=np.uint64)
    for sq in range(64):
        f, r = sq & 7, sq >> 3
        out[sq] = _mask(8 * (r + dr) + f + df for df, dr in deltas if 0 <= f + df < 8 and 0 <= r + dr < 8)
    return out


KNIGHT = _leaper(((1, 2), (2, 1), (2, -1), (1, -2), (-1, -2), (-2, -1), (-2, 1), (-1, 2)))
KING = _leaper(((-1, -1), (0, -1), (1, -1), (-1, 0), (1, 0), (-1, 1), (0, 1), (1, 1)))
PAWN_ATTACKS = np.stack([_leaper(((-1, 1), (1, 1))), _leaper(((-1, -1), (1, -1)))])
"""``PAWN_ATTACKS[colour, sq]``: squares a pawn of ``colour`` (0 white) on ``sq`` attacks."""

RAYS = np.array([[_mask(_walk(sq, df, dr)) for sq in range(64)] for df, dr in _DIRS], dtype=np.uint64)
ROOK_EMPTY = RAYS[0] | RAYS[1] | RAYS[4] | RAYS[5]
BISHOP_EMPTY = RAYS[2] | RAYS[3] | RAYS[6] | RAYS[7]


def _between_and_line() -> tuple[np.ndarray, np.ndarray]:
    between = np.zeros((64, 64), dtype=np.uint64)
    line = np.zeros((64, 64), dtype=np.uint64)
    for a in range(64):
        for df, dr in _DIRS:
            ray = _walk(a, df, dr)
            back = _walk(a, -df, -dr)
            for i, b in enumerate(ray):
                between[a, b] = _mask(ray[:i])
                line[a, b] = _mask(ray) | _mask(back) | (1 << a)
    return between, line


BETWEEN, LINE = _between_and_line()
"""``BETWEEN[a, b]``: squares strictly between two squares on one line (0 if not on a line);
``LINE[a, b]``: the whole line through both (0 if none)."""


@njit
def _ray_up(d: int, sq: int, occ: np.uint64) -> np.uint64:
    a = RAYS[d, sq]
    blockers = a & occ
    if blockers:
        a ^= RAYS[d, lsb(blockers)]
    return a


@njit
def _ray_down(d: int, sq: int, occ: np.uint64) -> np.uint64:
    a = RAYS[d, sq]
    blockers = a & occ
    if blockers:
        a ^= RAYS[d, msb(blockers)]
    return a


@njit
def rook_attacks(sq: int, occ: np.uint64) -> np.uint64:
    """Rook attacks from ``sq`` with blockers ``occ`` (each ray cut after its first blocker)."""
    return _ray_up(0, sq, occ) | _ray_up(1, sq, occ) | _ray_down(4, sq, occ) | _ray_down(5, sq, occ)


@njit
def bishop_attacks(sq: int, occ: np.uint64) -> np.uint64:
    """Bishop attacks from ``sq`` with blockers ``occ``."""
    return _ray_up(2, sq, occ) | _ray_up(3, sq, occ) | _ray_down(6, sq, occ) | _ray_down(7, sq, occ)
