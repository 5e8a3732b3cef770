"""Legal moves and their policy indices in one pass, as packed ints (the search's hot path).

Why not ``lc0py.chess.policy.legal_moves_with_indices``: it builds a ``chess.Move`` per legal move
through python-chess's generator (~2 µs a move); the search needs ``Move`` objects only for the
few edges it ever visits. Here moves are ints ``from | to << 6 | promotion << 12`` generated
from python-chess's attack tables, with the index looked up in the same loop (about 2× faster,
``scripts/bench_movegen.py``). Positions in check, en passant and Chess960 castling are
delegated to python-chess; everything is cross-checked against it in
``tests/search/test_movegen.py``.

Castling is stored as python-chess writes it (``e1g1`` on standard boards), so ``to_move``
gives a move ``Board.push`` accepts; the policy index uses king-takes-rook as lc0 does.
"""

from __future__ import annotations

import chess
from chess import (
    BB_DIAG_ATTACKS,
    BB_DIAG_MASKS,
    BB_FILE_ATTACKS,
    BB_FILE_MASKS,
    BB_KING_ATTACKS,
    BB_KNIGHT_ATTACKS,
    BB_PAWN_ATTACKS,
    BB_RANK_ATTACKS,
    BB_RANK_MASKS,
    BB_RAYS,
)

from lc0py.chess.policy import absolute_index_table

_PROMO_CODE = (0, 0, 0, 3, 2, 1, 0)  # by piece type: knight -> plain index, bishop 3, rook 2, queen 1
_BB_ALL = (1 << 64) - 1
_RANK_3 = 0xFF << 16
_RANK_6 = 0xFF << 40
_BACK_RANKS = 0xFF | (0xFF << 56)
_MOVE_CACHE: dict[int, chess.Move] = {}


def pack(move: chess.Move) -> int:
    return move.from_square | move.to_square << 6 | (move.promotion or 0) << 12


def to_move(packed: int) -> chess.Move:
    """The ``chess.Move`` of a packed move (memoised: moves are few and immutable)."""
    move = _MOVE_CACHE.get(packed)
    if move is None:
        promo = packed >> 12
        move = chess.Move(packed & 63, (packed >> 6) & 63, promo or None)
        _MOVE_CACHE[packed] = move
    return move


def _index_of(board: chess.Board, move: chess.Move, table: list[int], ours: int, king: int) -> int:
    frm, to = move.from_square, move.to_square
    if move.promotion:
        return table[_PROMO_CODE[move.promotion] * 4096 + frm * 64 + to]
    if frm == king and (to - frm in (2, -2) or (ours >> to) & 1):  # castling: king takes rook
        if not (ours >> to) & 1:
            to = (to & 56) | (7 if to > frm else 0)
    return table[frm * 64 + to]


def legal_moves_indexed(board: chess.Board, transform: int = 0) -> tuple[list[int], list[int]]:
    """All legal moves of ``board`` (packed ints) and their policy indices under ``transform``."""
    turn = board.turn
    ours = board.occupied_co[turn]
    theirs = board.occupied_co[not turn]
    occ = board.occupied
    king = (board.kings & ours).bit_length() - 1
    table = absolute_index_table(transform, turn == chess.BLACK)
    moves: list[int] = []
    idx: list[int] = []
    add_move = moves.append
    add_idx = idx.append

    if board.attackers_mask(not turn, king):  # in check: python-chess's evasions
        for m in board.generate_legal_moves():
            add_move(pack(m))
            add_idx(_index_of(board, m, table, ours, king))
        _check_indices(moves, idx, transform)
        return moves, idx

    blockers = board._slider_blockers(king)
    not_ours = ~ours & _BB_ALL
    king_rays = BB_RAYS[king]

    # Knights (a pinned knight never moves).
    bb = board.knights & ours & ~blockers
    while bb:
        low = bb & -bb
        frm = low.bit_length() - 1
        bb ^= low
        base = frm * 64
        t = BB_KNIGHT_ATTACKS[frm] & not_ours
        while t:
            lt = t & -t
            to = lt.bit_length() - 1
            t ^= lt
            add_move(frm | to << 6)
            add_idx(table[base + to])

    # Sliders: diagonal and straight attacks, pinned ones only along the pin.
    diag = (board.bishops | board.queens) & ours
    straight = (board.rooks | board.queens) & ours
    bb = diag | straight
    while bb:
        low = bb & -bb
        frm = low.bit_length() - 1
        bb ^= low
        t = 0
        if diag & low:
            t = BB_DIAG_ATTACKS[frm][BB_DIAG_MASKS[frm] & occ]
        if straight & low:
            t |= (
                BB_RANK_ATTACKS[frm][BB_RANK_MASKS[frm] & occ]
                | BB_FILE_ATTACKS[frm][BB_FILE_MASKS[frm] & occ]
            )
        t &= not_ours
        if blockers & low:
            t &= king_rays[frm]
        base = frm * 64
        while t:
            lt = t & -t
            to = lt.bit_length() - 1
            t ^= lt
            add_move(frm | to << 6)
            add_idx(table[base + to])

    # Pawns: pushes, captures, promotions (en passant below).
    pawns = board.pawns & ours
    empty = ~occ & _BB_ALL
    pawn_attacks = BB_PAWN_ATTACKS[turn]
    if turn == chess.WHITE:
        single = (pawns << 8) & empty
        double = ((single & _RANK_3) << 8) & empty
        step = 8
    else:
        single = (pawns >> 8) & empty
        double = ((single & _RANK_6) >> 8) & empty
        step = -8
    bb = pawns
    while bb:
        low = bb & -bb
        frm = low.bit_length() - 1
        bb ^= low
        t = pawn_attacks[frm] & theirs
        one = frm + step
        if (single >> one) & 1:
            t |= 1 << one
            two = one + step
            if 0 <= two < 64 and (double >> two) & 1:
                t |= 1 << two
        if blockers & low:
            t &= king_rays[frm]
        base = frm * 64
        while t:
            lt = t & -t
            to = lt.bit_length() - 1
            t ^= lt
            if lt & _BACK_RANKS:
                for promo in (chess.QUEEN, chess.ROOK, chess.BISHOP, chess.KNIGHT):
                    add_move(frm | to << 6 | promo << 12)
                    add_idx(table[_PROMO_CODE[promo] * 4096 + base + to])
            else:
                add_move(frm | to << 6)
                add_idx(table[base + to])
    if board.ep_square is not None:
        for m in board.generate_legal_ep():
            add_move(pack(m))
            add_idx(table[m.from_square * 64 + m.to_square])

    # King: to squares not attacked (not in check, so the king hides no slider line), castling.
    t = BB_KING_ATTACKS[king] & not_ours
    base = king * 64
    them = not turn
    while t:
        lt = t & -t
        to = lt.bit_length() - 1
        t ^= lt
        if not board.attackers_mask(them, to):
            add_move(king | to << 6)
            add_idx(table[base + to])
    rights = board.castling_rights & ours
    if rights:
        if board.chess960:
            for m in board.generate_castling_moves():
                add_move(pack(m))
                add_idx(_index_of(board, m, table, ours, king))
        else:
            # Standard castling (the king is not in check here): the squares between king and
            # rook empty, the king's path not attacked. Stored as e1g1/e1c1, indexed king-takes-rook.
            back = king & 56
            rooks = board.rooks & rights
            if king == back + 4:
                if (rooks >> (back + 7)) & 1 and not (occ >> (back + 5)) & 3:
                    if not board.attackers_mask(them, back + 5) and not board.attackers_mask(them, back + 6):
                        add_move(king | (back + 6) << 6)
                        add_idx(table[base + back + 7])
                if (rooks >> back) & 1 and not (occ >> (back + 1)) & 7:
                    if not board.attackers_mask(them, back + 3) and not board.attackers_mask(them, back + 2):
                        add_move(king | (back + 2) << 6)
                        add_idx(table[base + back])
    _check_indices(moves, idx, transform)
    return moves, idx


def _check_indices(moves: list[int], idx: list[int], transform: int) -> None:
    if idx and min(idx) < 0:
        bad = to_move(moves[idx.index(min(idx))])
        raise ValueError(f"move {bad.uci()} has no lc0 policy index under transform {transform}")
