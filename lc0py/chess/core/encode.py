"""lc0's 112 input planes and 1858-policy indices from core positions, compiled by numba.

The same rules as ``lc0py.chess.encoding`` (the oracle: identical masks, values and transform for
every input format and history fill, ``tests/search/core/test_core_encode.py``), written for the
search's hot path: one call fills one row of a ``PlanesBatch`` (``masks [112] uint64``, ``values
[112] float32``) straight from the game's positions, with no Python objects in between.

``hist`` rows are core positions (``lc0py.chess.core.board``), oldest first, ``reps`` their lc0
repetition counts. The history walk reaches back at most 8 written steps, further in the V2
formats (which skip unrepeated positions up to the last irreversible move) and — with history
fill ``fen_only``/``always`` — down to the game's first position: pass the game from its start
(row 0 = the start position or FEN), or at least every position the walk can reach.

History fill codes: ``FILL_NO`` 0, ``FILL_FEN_ONLY`` 1 (lc0's default), ``FILL_ALWAYS`` 2, in the
order of ``lc0py.chess.encoding.HISTORY_FILLS``.
"""

from __future__ import annotations

import numpy as np

from lc0py.chess.core.bits import ALL, RANK_1, RANK_8, U0, U1, bswap, lsb
from lc0py.chess.core.board import (
    KING_T,
    NO_EP,
    PAWN,
    W_CASTLING,
    W_EP,
    W_PIECES,
    W_RULE50,
    W_STM,
)
from lc0py.chess.core.jit import njit
from lc0py.chess.encoding import HISTORY_FILLS, SUPPORTED_FORMATS
from lc0py.chess.policy import absolute_index_table
from lc0py.chess.transforms import FLIP, MIRROR, SQUARE_MAPS, TRANSPOSE

FILL_NO, FILL_FEN_ONLY, FILL_ALWAYS = range(3)
assert HISTORY_FILLS == ("no", "fen_only", "always")
AUX_BASE = 104

_START = np.array(
    [0xFFFF, 0xFFFF << 48, 0xFF << 8 | 0xFF << 48, 0x42 | 0x42 << 56, 0x24 | 0x24 << 56,
     0x81 | 0x81 << 56, 0x08 | 0x08 << 56, 0x10 | 0x10 << 56],
    dtype=np.uint64,
)  # fmt: skip
_STANDARD_CASTLING = np.uint64(1 | (1 << 7) | (1 << 56) | (1 << 63))
_POLICY = np.array(absolute_index_table(0, False), dtype=np.int16)  # [code*4096 + from*64 + to]
_SQUARE_MAPS = np.array(SQUARE_MAPS, dtype=np.int64)
_PROMO_CODE = np.array([0, 0, 3, 2, 1], dtype=np.int64)  # core promo (N, B, R, Q) → policy code


def fill_code(fill: str) -> int:
    """The code of a history fill name (``"no"``, ``"fen_only"``, ``"always"``)."""
    return HISTORY_FILLS.index(fill)


def is_supported(input_format: int) -> bool:
    return input_format in SUPPORTED_FORMATS


# --- transforms -------------------------------------------------------------------------------------
@njit
def flip_mask(v: np.uint64) -> np.uint64:
    """Files a ↔ h: reverse the bits inside each byte."""
    v = ((v >> np.uint64(1)) & np.uint64(0x5555555555555555)) | (
        (v & np.uint64(0x5555555555555555)) << np.uint64(1)
    )
    v = ((v >> np.uint64(2)) & np.uint64(0x3333333333333333)) | (
        (v & np.uint64(0x3333333333333333)) << np.uint64(2)
    )
    return ((v >> np.uint64(4)) & np.uint64(0x0F0F0F0F0F0F0F0F)) | (
        (v & np.uint64(0x0F0F0F0F0F0F0F0F)) << np.uint64(4)
    )


@njit
def transpose_mask(v: np.uint64) -> np.uint64:
    """Reflection in the a8–h1 diagonal (lc0 ``TransposeBitsInBytes``)."""
    v = (
        ((v & np.uint64(0xAA00AA00AA00AA00)) >> np.uint64(9))
        | ((v & np.uint64(0x0055005500550055)) << np.uint64(9))
        | (v & np.uint64(0x55AA55AA55AA55AA))
    )
    v = (
        ((v & np.uint64(0xCCCC0000CCCC0000)) >> np.uint64(18))
        | ((v & np.uint64(0x0000333300003333)) << np.uint64(18))
        | (v & np.uint64(0x3333CCCC3333CCCC))
    )
    return (
        ((v & np.uint64(0xF0F0F0F000000000)) >> np.uint64(36))
        | ((v & np.uint64(0x000000000F0F0F0F)) << np.uint64(36))
        | (v & np.uint64(0x0F0F0F0FF0F0F0F0))
    )


@njit
def transform_mask(v: np.uint64, transform: int) -> np.uint64:
    """FLIP, then MIRROR, then TRANSPOSE (docs/input-encoding.md §4)."""
    if transform & FLIP:
        v = flip_mask(v)
    if transform & MIRROR:
        v = bswap(v)
    if transform & TRANSPOSE:
        v = transpose_mask(v)
    return v


@njit
def _compare_transposing(v: np.uint64, transform: int) -> int:
    if transform & FLIP:
        v = flip_mask(v)
    if transform & MIRROR:
        v = bswap(v)
    w = transpose_mask(v)
    if v > w:
        return 1
    if v < w:
        return -1
    return 0


@njit
def choose_transform(pos: np.ndarray) -> int:
    """lc0 ``ChooseTransform`` (§4): 0 with castling rights; FLIP with the king on files a–d;
    pawnless positions also MIRROR and TRANSPOSE into the e1–h4 triangle."""
    if pos[W_CASTLING]:
        return 0
    black = pos[W_STM] != U0
    us = 1 if black else 0
    king = pos[W_PIECES + KING_T] & pos[us]
    if black:
        king = bswap(king)
    transform = 0
    if king & np.uint64(0x0F0F0F0F0F0F0F0F):
        transform |= FLIP
        king = flip_mask(king)
    if pos[W_PIECES + PAWN]:
        return transform
    if king & np.uint64(0xFFFFFFFF00000000):
        transform |= MIRROR
        king = bswap(king)
    if king & np.uint64(0xE0C08000):
        return transform | TRANSPOSE
    if king & np.uint64(0x10204080):
        for c in range(7):
            if c == 0:
                v = pos[0] | pos[1]
            elif c == 1:
                v = pos[us]
            elif c == 2:
                v = pos[W_PIECES + 5]  # kings
            elif c == 3:
                v = pos[W_PIECES + 4]  # queens
            elif c == 4:
                v = pos[W_PIECES + 3]  # rooks
            elif c == 5:
                v = pos[W_PIECES + 1]  # knights
            else:
                v = pos[W_PIECES + 2]  # bishops
            if black:
                v = bswap(v)
            outcome = _compare_transposing(v, transform)
            if outcome < 0:
                return transform
            if outcome > 0:
                return transform | TRANSPOSE
    return transform


# --- planes -------------------------------------------------------------------------------------------
@njit
def _is_startpos(hist: np.ndarray, idx: int) -> bool:
    """lc0 ``board == kStartposBoard``: pieces, White to move, no ep marker, all four castlings."""
    if hist[idx, W_STM] != U0 or int(hist[idx, W_EP]) != NO_EP or hist[idx, W_CASTLING] != _STANDARD_CASTLING:
        return False
    for i in range(8):
        if hist[idx, i] != _START[i]:
            return False
    return True


@njit(inline="always")
def _write_step(
    hist: np.ndarray, idx: int, rep: int, undo: bool, black: bool, transform: int, base: int, out: np.ndarray
) -> None:
    """The 13 planes of history row ``idx`` into ``out[base:base + 13]``, in the current side to
    move's frame (``black``: mirror, Black's pieces first), ``transform`` applied."""
    white_pcs = hist[idx, 0]
    black_pcs = hist[idx, 1]
    pawns = hist[idx, W_PIECES + PAWN]
    wp = pawns & white_pcs
    bp = pawns & black_pcs
    if undo:  # take back the double push that made a synthesised step's ep marker (§3)
        ep = int(hist[idx, W_EP])
        if hist[idx, W_STM] == U0:  # Black just pushed: pawn from ep - 8 back to ep + 8
            bp = (bp & ~(U1 << np.uint64(ep - 8))) | (U1 << np.uint64(ep + 8))
        else:
            wp = (wp & ~(U1 << np.uint64(ep + 8))) | (U1 << np.uint64(ep - 8))
    ours = black_pcs if black else white_pcs
    theirs = white_pcs if black else black_pcs
    for side in range(2):
        colour = ours if side == 0 else theirs
        for t in range(6):
            if t == PAWN:
                m = wp if (side == 0) != black else bp
            else:
                m = hist[idx, W_PIECES + t] & colour
            if black:
                m = bswap(m)
            if transform:
                m = transform_mask(m, transform)
            out[base + 6 * side + t] = m
    out[base + 12] = ALL if rep >= 1 else U0


@njit
def encode(
    hist: np.ndarray,
    reps: np.ndarray,
    n: int,
    input_format: int,
    fill: int,
    out_masks: np.ndarray,
    out_values: np.ndarray,
) -> int:
    """lc0's 112 planes of the last position of ``hist[:n]`` into one batch row; returns the
    canonical transform used (0 if none). ``input_format`` must be one of ``SUPPORTED_FORMATS``."""
    canonical = input_format >= 3
    v2 = input_format == 5 or input_format == 133
    cur = hist[n - 1]
    black = cur[W_STM] != U0
    transform = choose_transform(cur) if canonical else 0
    for i in range(112):
        out_masks[i] = U0
        out_values[i] = 1.0
    cur_castling = cur[W_CASTLING]
    written = 0
    k = n - 1
    while written < 8:
        idx = k if k > 0 else 0
        has_ep = int(hist[idx, W_EP]) != NO_EP
        if canonical and hist[idx, W_CASTLING] != cur_castling:
            break
        if canonical and k != n - 1 and has_ep:
            break
        if fill == FILL_NO and (k < -1 or (k == -1 and not has_ep)):
            break
        if k < 0 and fill == FILL_FEN_ONLY and _is_startpos(hist, idx):
            break
        if v2 and k < 0:
            break  # lc0 loops forever here (docs/input-encoding.md §3); stop as lc0py's encoder does
        r50 = int(hist[idx, W_RULE50])
        if v2 and written > 0 and reps[idx] == 0:
            if r50 == 0:
                break
            k -= 1
            continue
        undo = k < 0 and has_ep
        _write_step(hist, idx, int(reps[idx]), undo, black, 0 if undo else transform, 13 * written, out_masks)
        written += 1
        if canonical and r50 == 0:
            break
        k -= 1

    # Auxiliary planes 104-111.
    rights = cur_castling
    if rights:
        white_king = lsb(cur[W_PIECES + KING_T] & cur[0])
        black_king = lsb(cur[W_PIECES + KING_T] & cur[1])
        below_w = (U1 << np.uint64(white_king)) - U1
        below_b = (U1 << np.uint64(black_king)) - U1
        a_side = (rights & RANK_1 & below_w) | (rights & RANK_8 & below_b)
        h_side = rights & ~a_side
        if input_format == 1:
            ours_rank = RANK_8 if black else RANK_1
            theirs_rank = RANK_1 if black else RANK_8
            if a_side & ours_rank:
                out_masks[AUX_BASE] = ALL
            if h_side & ours_rank:
                out_masks[AUX_BASE + 1] = ALL
            if a_side & theirs_rank:
                out_masks[AUX_BASE + 2] = ALL
            if h_side & theirs_rank:
                out_masks[AUX_BASE + 3] = ALL
        else:  # castling rights present: transform is 0
            out_masks[AUX_BASE] = bswap(a_side) if black else a_side
            out_masks[AUX_BASE + 1] = bswap(h_side) if black else h_side
    if canonical:
        ep = int(cur[W_EP])
        if ep != NO_EP:
            out_masks[AUX_BASE + 4] = transform_mask(U1 << np.uint64(56 + (ep & 7)), transform)
    elif black:
        out_masks[AUX_BASE + 4] = ALL
    out_masks[AUX_BASE + 5] = ALL
    if (input_format == 132 or input_format == 133) and black:
        out_masks[AUX_BASE + 6] = ALL
    out_masks[AUX_BASE + 7] = ALL
    r50_cur = int(cur[W_RULE50])
    if input_format >= 4:  # hectoplies (4, 5, 132, 133): float32 division as lc0 does it
        out_values[AUX_BASE + 5] = np.float32(r50_cur) / np.float32(100.0)
    else:
        out_values[AUX_BASE + 5] = np.float32(r50_cur)
    return transform


# --- policy indices -------------------------------------------------------------------------------------
@njit
def policy_indices(pos: np.ndarray, moves: np.ndarray, n: int, transform: int, out_idx: np.ndarray) -> None:
    """lc0's 1858-policy index of each of ``moves[:n]`` (legal in ``pos``) under the canonical
    ``transform`` (the one :func:`encode` returned); -1 for a move without an entry (impossible
    for legal moves under a transform lc0 can choose for ``pos``)."""
    flip = 56 if pos[W_STM] != U0 else 0
    for i in range(n):
        m = np.int64(moves[i])
        frm = (m & 63) ^ flip
        to = ((m >> 6) & 63) ^ flip
        code = _PROMO_CODE[m >> 12]
        if transform:
            frm = _SQUARE_MAPS[transform, frm]
            to = _SQUARE_MAPS[transform, to]
        out_idx[i] = _POLICY[code * 4096 + frm * 64 + to]
