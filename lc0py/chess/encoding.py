"""Positions → lc0's 112 input planes (docs/input-encoding.md §2–§4).

A plane is a 64-bit square mask plus one float; ``EncodedPosition`` holds ``masks [112] uint64`` and
``values [112] float32`` exactly as lc0's ``EncodePositionForNN`` fills its ``InputPlanes``
(including lc0's default value 1.0 for planes that are not filled, so the arrays compare equal
to lc0's field by field). :func:`encode_batch` stacks them into the backends' ``PlanesBatch``.

The history walk is lc0's, in absolute coordinates: every written board is mapped into the
current side-to-move frame (mirror when Black is to move, "ours" = side to move), which is what
lc0's alternating ``flip`` achieves. The one deliberate difference: in the V2 formats (5, 133) the
walk stops at synthesised history (``k < 0``), where lc0 loops forever (docs/input-encoding.md §3).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lc0py.chess.planes import NUM_PLANES, PlanesBatch
from lc0py.chess.transforms import (
    ALL_SQUARES,
    FLIP,
    MIRROR,
    TRANSPOSE,
    flip_mask,
    mirror_mask,
    transform_mask,
    transform_masks,
    transpose_mask,
)

SUPPORTED_FORMATS = (1, 2, 3, 4, 5, 132, 133)
HISTORY_FILLS = ("no", "fen_only", "always")
AUX_BASE = 104

_BB_RANK_1 = 0xFF
_BB_RANK_8 = 0xFF << 56
_STANDARD_CASTLING = 1 | (1 << 7) | (1 << 56) | (1 << 63)
_START_PIECES = (
    0xFF00, 0x42, 0x24, 0x81, 0x08, 0x10,
    0xFF << 48, 0x42 << 56, 0x24 << 56, 0x81 << 56, 0x08 << 56, 0x10 << 56,
)  # fmt: skip


class PositionRecord:
    """What lc0 knows about one position of a game (immutable once made).

    ``pieces``: 12 absolute masks (white P N B R Q K, black P N B R Q K); ``castling``: python-chess
    castling rights (rook squares); ``ep``: lc0's ep marker as the absolute ep square, −1 if none;
    ``turn``: True = White to move; ``key``: the board identity lc0 compares for repetitions.
    """

    __slots__ = ("pieces", "castling", "ep", "turn", "rule50", "repetitions", "key", "_frames")

    def __init__(
        self,
        pieces: tuple[int, ...],
        castling: int,
        ep: int,
        turn: bool,
        rule50: int,
        repetitions: int,
        key: tuple[object, ...],
    ) -> None:
        self.pieces = pieces
        self.castling = castling
        self.ep = ep
        self.turn = turn
        self.rule50 = rule50
        self.repetitions = repetitions
        self.key = key
        self._frames: dict[int, np.ndarray] = {}

    def is_startpos(self) -> bool:
        """lc0 ``board == kStartposBoard`` (rule-50 and move number are not part of the board)."""
        return (
            self.turn and self.ep < 0 and self.castling == _STANDARD_CASTLING and self.pieces == _START_PIECES
        )

    def frame_planes(self, black: bool, transform: int = 0) -> np.ndarray:
        """The 13 planes of one history step, in the frame of White (False) or Black (True) to move,
        with the canonical ``transform`` applied.

        Cached per (frame, transform): ancestors of a search leaf are encoded again and again.
        """
        slot = 8 * black + transform
        cached = self._frames.get(slot)
        if cached is None:
            cached = _step_planes(self.pieces, self.repetitions, black)
            if transform:
                cached = transform_masks(cached, transform)
            self._frames[slot] = cached
        return cached


def _step_planes(pieces: Sequence[int], repetitions: int, black: bool) -> np.ndarray:
    """Ours (6), theirs (6), repetition plane; mirrored when Black is the side to move."""
    ordered = [*pieces[6:], *pieces[:6]] if black else list(pieces)
    ordered.append(ALL_SQUARES if repetitions >= 1 else 0)
    arr = np.array(ordered, dtype=np.uint64)
    return arr.byteswap() if black else arr


def _undo_double_push(record: PositionRecord) -> list[int]:
    """``record``'s pieces with the double push that created its ep marker taken back (§3)."""
    pieces = list(record.pieces)
    ep = record.ep
    if record.turn:  # Black just pushed: pawn ep-8 (rank 5) back to ep+8 (rank 7).
        pieces[6] = (pieces[6] & ~(1 << (ep - 8))) | (1 << (ep + 8))
    else:  # White just pushed: pawn ep+8 (rank 4) back to ep-8 (rank 2).
        pieces[0] = (pieces[0] & ~(1 << (ep + 8))) | (1 << (ep - 8))
    return pieces


@dataclass
class EncodedPosition:
    """One position's input planes: ``masks [112] uint64``, ``values [112] float32``.

    ``transform``: the canonical transform applied to planes 0–108 (FLIP=1, MIRROR=2, TRANSPOSE=4),
    0 if none; the policy must be read with the same transform (``lc0py.chess.policy``).
    """

    masks: np.ndarray
    values: np.ndarray
    transform: int = 0

    def dense(self) -> np.ndarray:
        """``[112, 8, 8]`` float32 network input (for tests and debugging)."""
        return PlanesBatch(self.masks[None], self.values[None]).dense()[0]


def encode_batch(positions: Sequence[EncodedPosition]) -> PlanesBatch:
    """Stack encoded positions into a backend batch ``[B, 112]``."""
    if not positions:
        return PlanesBatch(np.zeros((0, NUM_PLANES), np.uint64), np.zeros((0, NUM_PLANES), np.float32))
    return PlanesBatch(np.stack([p.masks for p in positions]), np.stack([p.values for p in positions]))


def _history_steps(
    records: Sequence[PositionRecord], canonical: bool, v2: bool, fill: str
) -> tuple[list[tuple[PositionRecord, bool]], bool]:
    """lc0's history walk (§3): the (position, undo-double-push) pairs written to steps 0, 1, …

    Also returns whether the V2 walk stopped at synthesised history (lc0py's fix of lc0's hang).
    """
    n = len(records)
    current = records[-1]
    steps: list[tuple[PositionRecord, bool]] = []
    k = n - 1
    while len(steps) < 8:
        pos = records[k if k > 0 else 0]
        if canonical and pos.castling != current.castling:
            break
        if canonical and k != n - 1 and pos.ep >= 0:
            break
        if fill == "no" and (k < -1 or (k == -1 and pos.ep < 0)):
            break
        if k < 0 and fill == "fen_only" and pos.is_startpos():
            break
        if v2 and k < 0:
            # lc0 keeps skipping p[0] (repetitions 0) here and never ends unless its rule50 is 0.
            return steps, True
        if v2 and steps and pos.repetitions == 0:
            if pos.rule50 == 0:
                break
            k -= 1
            continue
        steps.append((pos, k < 0 and pos.ep >= 0))
        if canonical and pos.rule50 == 0:
            break
        k -= 1
    return steps, False


def lc0_v2_loops_forever(records: Sequence[PositionRecord], fill: str = "fen_only") -> bool:
    """Whether lc0's own V2 encoder (formats 5, 133) would never return for this game (§3)."""
    _, stopped_at_start = _history_steps(records, True, True, fill)
    return stopped_at_start and records[0].rule50 != 0


def _castling_sides(record: PositionRecord) -> tuple[int, int]:
    """Castling rook squares split into (a-side, h-side), absolute coordinates."""
    rights = record.castling
    if not rights:
        return 0, 0
    white_king = record.pieces[5].bit_length() - 1
    black_king = record.pieces[11].bit_length() - 1
    white, black = rights & _BB_RANK_1, rights & _BB_RANK_8
    a_side = (white & ((1 << white_king) - 1)) | (black & ((1 << black_king) - 1))
    return a_side, rights & ~a_side


def _compare_transposing(v: int, transform: int) -> int:
    if transform & FLIP:
        v = flip_mask(v)
    if transform & MIRROR:
        v = mirror_mask(v)
    w = transpose_mask(v)
    return (v > w) - (v < w)


def choose_transform(record: PositionRecord) -> int:
    """lc0 ``ChooseTransform`` for the position of ``record`` (§4)."""
    if record.castling:
        return 0
    p = record.pieces
    black = not record.turn
    king = p[11] if black else p[5]
    if black:
        king = mirror_mask(king)
    transform = 0
    if king & 0x0F0F0F0F0F0F0F0F:
        transform |= FLIP
        king = flip_mask(king)
    if p[0] | p[6]:
        return transform
    if king & 0xFFFFFFFF00000000:
        transform |= MIRROR
        king = mirror_mask(king)
    if king & 0xE0C08000:
        return transform | TRANSPOSE
    if king & 0x10204080:
        ours = p[6:] if black else p[:6]
        candidates = (
            sum(p),  # disjoint masks: sum == OR
            sum(ours),
            p[5] | p[11],
            p[4] | p[10],
            p[3] | p[9],
            p[1] | p[7],
            p[2] | p[8],
        )
        for bb in candidates:
            outcome = _compare_transposing(mirror_mask(bb) if black else bb, transform)
            if outcome < 0:
                return transform
            if outcome > 0:
                return transform | TRANSPOSE
    return transform


def encode_history(
    records: Sequence[PositionRecord], input_format: int, fill: str = "fen_only"
) -> EncodedPosition:
    """Encode the last position of ``records`` for a network of ``input_format`` (§2–§4)."""
    blocks, aux, rule50_value, transform = encode_history_parts(records, input_format, fill)
    masks = np.empty(NUM_PLANES, dtype=np.uint64)
    masks[:AUX_BASE] = np.concatenate(blocks)
    masks[AUX_BASE:] = aux
    values = np.ones(NUM_PLANES, dtype=np.float32)
    values[AUX_BASE + 5] = rule50_value
    return EncodedPosition(masks, values, transform)


def encode_history_parts(
    records: Sequence[PositionRecord], input_format: int, fill: str = "fen_only"
) -> tuple[list[np.ndarray], list[int], float, int]:
    """:func:`encode_history` in parts: uint64 blocks that make planes 0–103 when joined (the
    cached 13-plane frames of the history steps, then zeros), the masks of planes 104–111, the
    value of the rule-50 plane (every other value is 1.0) and the transform. The search joins
    the parts of a whole batch at once (:func:`parts_batch`): per-position numpy calls cost more
    than the encoding itself."""
    if input_format not in SUPPORTED_FORMATS:
        raise ValueError(f"input format {input_format} is not supported (supported: {SUPPORTED_FORMATS})")
    if fill not in HISTORY_FILLS:
        raise ValueError(f"history fill {fill!r} is not one of {HISTORY_FILLS}")
    canonical = input_format >= 3
    v2 = input_format in (5, 133)
    current = records[-1]
    black = not current.turn

    transform = choose_transform(current) if canonical else 0
    steps, _ = _history_steps(records, canonical, v2, fill)
    # Only non-canonical formats undo a double push, so those blocks never need a transform.
    blocks = [
        _step_planes(_undo_double_push(pos), pos.repetitions, black)
        if undo
        else pos.frame_planes(black, transform)
        for pos, undo in steps
    ]
    if len(blocks) < 8:
        blocks.append(_ZERO_BLOCKS[len(blocks)])
    aux = _aux_masks(current, input_format, black, transform)
    if input_format >= 4:  # hectoplies: 4, 5, 132, 133; float32 division as lc0 does it
        rule50_value = float(np.float32(current.rule50) / np.float32(100.0))
    else:
        rule50_value = float(current.rule50)
    return blocks, aux, rule50_value, transform


def parts_batch(
    blocks: Sequence[np.ndarray], aux: Sequence[list[int]], rule50_values: Sequence[float]
) -> PlanesBatch:
    """A backend batch from :func:`encode_history_parts` results: ``blocks`` all positions' blocks
    in order (one list), ``aux``/``rule50_values`` one entry a position (as :func:`encode_batch`)."""
    n = len(aux)
    masks = np.empty((n, NUM_PLANES), dtype=np.uint64)
    if n:
        masks[:, :AUX_BASE] = np.concatenate(blocks).reshape(n, AUX_BASE)
        masks[:, AUX_BASE:] = np.array(aux, dtype=np.uint64)
    values = np.ones((n, NUM_PLANES), dtype=np.float32)
    values[:, AUX_BASE + 5] = rule50_values
    return PlanesBatch(masks, values)


_ZERO_BLOCKS = tuple(np.zeros(AUX_BASE - 13 * k, dtype=np.uint64) for k in range(8))


def _aux_masks(current: PositionRecord, input_format: int, black: bool, transform: int) -> list[int]:
    """Masks of planes 104–111 (§2), planes 104–108 transformed."""
    aux = [0] * 8
    a_side, h_side = _castling_sides(current)
    if input_format == 1:
        ours_rank, theirs_rank = (_BB_RANK_8, _BB_RANK_1) if black else (_BB_RANK_1, _BB_RANK_8)
        sides = (a_side & ours_rank, h_side & ours_rank, a_side & theirs_rank, h_side & theirs_rank)
        for plane, bits in enumerate(sides):
            if bits:
                aux[plane] = ALL_SQUARES
    elif a_side | h_side:  # castling rights present: transform is 0
        aux[0] = mirror_mask(a_side) if black else a_side
        aux[1] = mirror_mask(h_side) if black else h_side
    if input_format >= 3:
        if current.ep >= 0:
            aux[4] = transform_mask(1 << (56 + (current.ep & 7)), transform)
    elif black:
        aux[4] = ALL_SQUARES
    aux[5] = ALL_SQUARES
    if input_format in (132, 133) and black:
        aux[6] = ALL_SQUARES
    aux[7] = ALL_SQUARES
    return aux
