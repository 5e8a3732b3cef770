"""lc0's 1858-entry policy index and the move ↔ index maps (docs/input-encoding.md §5, §6).

Entries are moves in the side-to-move frame (Black's moves mirrored, ``s → s ^ 56``): every
queen-line or knight move from every square in square order (1792), then the 66 q/r/b pawn
promotions. Knight promotion is the plain from-to entry; castling is king-takes-rook (O-O =
``e1h1`` = 103). In canonical formats the move squares are mapped with the position's transform,
using the same square map as the input planes (:mod:`lc0py.chess.transforms`). lc0 ≥ 0.32 maps
moves differently when TRANSPOSE is set; pass ``lc0_032_transpose_compat=True`` to reproduce it.
"""

from __future__ import annotations

import chess
import numpy as np

from lc0py.chess.transforms import LC0_032_SQUARE_MAPS, SQUARE_MAPS, inverse_transform

POLICY_SIZE = 1858

_PROMO_PIECES = "qrb"
_PROMO_CODE = {chess.QUEEN: 1, chess.ROOK: 2, chess.BISHOP: 3}  # knight promotion → 0 (plain move)
_PROMO_FROM_CODE = (None, chess.QUEEN, chess.ROOK, chess.BISHOP)


def _reachable(frm: int, to: int) -> bool:
    """Queen line (any distance) or knight move from ``frm`` to ``to``."""
    df, dr = abs((to & 7) - (frm & 7)), abs((to >> 3) - (frm >> 3))
    return df == 0 or dr == 0 or df == dr or {df, dr} == {1, 2}


def _generate() -> tuple[str, ...]:
    """Regenerate lc0's ``kMoveStrs`` order (§5.1)."""
    moves = [
        chess.square_name(frm) + chess.square_name(to)
        for frm in range(64)
        for to in range(64)
        if to != frm and _reachable(frm, to)
    ]
    for frm in range(48, 56):
        for to in range(56, 64):
            if abs((to & 7) - (frm & 7)) <= 1:
                moves.extend(chess.square_name(frm) + chess.square_name(to) + p for p in _PROMO_PIECES)
    return tuple(moves)


POLICY_MOVES: tuple[str, ...] = _generate()
"""The 1858 lc0 move strings in policy order (side-to-move frame)."""

assert len(POLICY_MOVES) == POLICY_SIZE


def _packed(frm: int, to: int, code: int) -> int:
    return code * 4096 + frm * 64 + to


def _tables() -> tuple[np.ndarray, np.ndarray]:
    """``PACKED_TO_INDEX[code*4096 + from*64 + to]`` (−1 if no entry) and its inverse ``[1858, 3]``."""
    packed_to_index = np.full(4 * 4096, -1, dtype=np.int32)
    index_to_packed = np.zeros((POLICY_SIZE, 3), dtype=np.int32)
    for i, m in enumerate(POLICY_MOVES):
        frm, to = chess.parse_square(m[0:2]), chess.parse_square(m[2:4])
        code = 1 + _PROMO_PIECES.index(m[4]) if len(m) == 5 else 0
        packed_to_index[_packed(frm, to, code)] = i
        index_to_packed[i] = (frm, to, code)
    return packed_to_index, index_to_packed


_PACKED_TO_INDEX, _INDEX_TO_PACKED = _tables()
_PACKED_LIST: list[int] = _PACKED_TO_INDEX.tolist()


def _attention_map() -> np.ndarray:
    """Index into the 4288-logit attention head for each policy entry (§5.3)."""
    out = np.empty(POLICY_SIZE, dtype=np.int64)
    for i, (frm, to, code) in enumerate(_INDEX_TO_PACKED.tolist()):
        out[i] = frm * 64 + to if code == 0 else 4096 + (frm - 48) * 24 + (to - 56) * 3 + code - 1
    return out


ATTENTION_POLICY_MAP: np.ndarray = _attention_map()
"""``[1858]`` int64: ``policy[k] = attention_logits[ATTENTION_POLICY_MAP[k]]`` (4288-entry vector)."""


def _square_map(transform: int, compat: bool) -> tuple[int, ...]:
    return (LC0_032_SQUARE_MAPS if compat else SQUARE_MAPS)[transform]


def _frame_squares(move: chess.Move, board: chess.Board) -> tuple[int, int, int]:
    """(from, to, promotion code) in the side-to-move frame, castling as king-takes-rook."""
    frm, to = move.from_square, move.to_square
    if board.kings & (1 << frm) and (abs(to - frm) == 2 or board.occupied_co[board.turn] & (1 << to)):
        # Castling. python-chess writes standard castling as e1g1/e1c1; lc0 wants the rook square.
        if not board.occupied_co[board.turn] & (1 << to):
            to = (to & 56) | (7 if to > frm else 0)
    code = _PROMO_CODE.get(move.promotion, 0) if move.promotion else 0
    if board.turn == chess.BLACK:
        frm ^= 56
        to ^= 56
    return frm, to, code


def move_to_index(
    move: chess.Move, board: chess.Board, transform: int = 0, *, lc0_032_transpose_compat: bool = False
) -> int:
    """Policy index of ``move`` (legal in ``board``) under the canonical ``transform``.

    Raises ``ValueError`` for a move that has no policy entry (not a queen-line/knight move).
    """
    frm, to, code = _frame_squares(move, board)
    if transform:
        sq = _square_map(transform, lc0_032_transpose_compat)
        frm, to = sq[frm], sq[to]
    idx = _PACKED_LIST[code * 4096 + frm * 64 + to]
    if idx < 0:
        raise ValueError(f"move {move.uci()} has no lc0 policy index")
    return idx


_ABSOLUTE_TABLES: dict[tuple[int, bool, bool], list[int]] = {}


def absolute_index_table(transform: int, black: bool, compat: bool = False) -> list[int]:
    """Policy index of every move given in absolute squares, as one flat look-up table.

    ``table[code*4096 + from*64 + to]`` with ``code`` 0 for a plain move (and knight promotion),
    1/2/3 for promotion to queen/rook/bishop; the side-to-move mirror (``black``) and the
    canonical ``transform`` are baked in (``compat``: lc0 0.32's transpose mapping). Entries of
    moves outside the 1858 list are -1. Cached per argument triple; search looks moves up here
    without building ``chess.Move`` objects."""
    key = (transform, black, compat)
    table = _ABSOLUTE_TABLES.get(key)
    if table is None:
        sq = np.array(_square_map(transform, compat), dtype=np.int64)[np.arange(64) ^ (56 if black else 0)]
        code, frm, to = np.meshgrid(np.arange(4), np.arange(64), np.arange(64), indexing="ij")
        table = _PACKED_TO_INDEX[code * 4096 + sq[frm] * 64 + sq[to]].ravel().tolist()
        _ABSOLUTE_TABLES[key] = table
    return table


def legal_moves_with_indices(
    board: chess.Board, transform: int = 0, *, lc0_032_transpose_compat: bool = False
) -> tuple[list[chess.Move], np.ndarray]:
    """The legal moves of ``board`` (python-chess order) and their policy indices (int32 array).

    ``transform`` must be one lc0 can choose for ``board`` (only 0 or FLIP with pawns on the
    board), else a promotion may have no entry and ``ValueError`` is raised.

    Move generation dominates; the per-move work is a few integer operations and one table look-up.
    """
    moves = list(board.generate_legal_moves())
    black = board.turn == chess.BLACK
    table = absolute_index_table(transform, black, lc0_032_transpose_compat)
    ours = board.occupied_co[board.turn]
    king = (board.kings & ours).bit_length() - 1
    indices = []
    for m in moves:
        frm, to = m.from_square, m.to_square
        if m.promotion:
            code = _PROMO_CODE[m.promotion] if m.promotion != chess.KNIGHT else 0
        else:
            code = 0
            if frm == king and (to - frm in (2, -2) or (ours >> to) & 1):  # castling: king takes rook
                if not (ours >> to) & 1:
                    to = (to & 56) | (7 if to > frm else 0)
        indices.append(table[code * 4096 + frm * 64 + to])
    out = np.array(indices, dtype=np.int32)
    if moves and out.min() < 0:
        bad = moves[int(out.argmin())]
        raise ValueError(f"move {bad.uci()} has no lc0 policy index under transform {transform}")
    return moves, out


def index_to_move(
    index: int, board: chess.Board, transform: int = 0, *, lc0_032_transpose_compat: bool = False
) -> chess.Move:
    """The python-chess move of policy entry ``index`` in ``board`` (inverse of :func:`move_to_index`).

    A plain pawn move onto the last rank becomes a knight promotion; king onto its own rook becomes
    castling (``e1g1`` form on standard boards, king-takes-rook on Chess960 boards). Legality is not
    checked.
    """
    if not 0 <= index < POLICY_SIZE:
        raise ValueError(f"policy index {index} out of range 0..{POLICY_SIZE - 1}")
    frm, to, code = (int(x) for x in _INDEX_TO_PACKED[index])
    if transform:
        inv = inverse_transform(transform)
        sq = _square_map(inv, lc0_032_transpose_compat)
        frm, to = sq[frm], sq[to]
    if board.turn == chess.BLACK:
        frm ^= 56
        to ^= 56
    promotion = _PROMO_FROM_CODE[code]
    if promotion is None and board.pawns & (1 << frm) and (to >> 3) in (0, 7):
        promotion = chess.KNIGHT
    ours = board.occupied_co[board.turn]
    if board.kings & ours & (1 << frm) and ours & board.rooks & (1 << to) and not board.chess960:
        kside = to > frm
        standard_to = (frm & 56) | (6 if kside else 2)
        if frm & 7 == 4 and to & 7 in (0, 7):
            to = standard_to
    return chess.Move(frm, to, promotion)


def king_takes_rook_uci(board: chess.Board, move: chess.Move) -> str:
    """UCI text with standard castling written king-takes-rook (``e1h1``, ``e8a8``), as lc0 prints
    moves in ``benchmark`` and VerboseMoveStats whatever UCI_Chess960 says (docs/uci-and-tools.md §2, §6).
    A Chess960 board's castling moves are king-takes-rook already (``e8c8`` with the rook on c8,
    two squares from the king): they are written as they are, as ``uci_move`` does."""
    if (not board.chess960 and board.is_castling(move)
            and chess.square_distance(move.from_square, move.to_square) == 2):
        rook_file = 7 if move.to_square > move.from_square else 0
        return chess.Move(
            move.from_square, chess.square(rook_file, chess.square_rank(move.from_square))
        ).uci()
    return move.uci()
