"""Chess positions as uint64 words, legal moves, ``play`` and the Zobrist key, compiled by numba.

Layout of a position (``np.uint64[POS_WORDS]``, absolute squares a1 = 0 … h8 = 63):

=========== =====================================================================================
word        content
=========== =====================================================================================
0, 1        white pieces, black pieces (indexed by colour: 0 white, 1 black)
2 … 7       pawns, knights, bishops, rooks, queens, kings (both colours; index 2 + piece type)
8           castling rights as the castling rooks' squares (python-chess's ``castling_rights``)
9           lc0's en-passant marker square (64 = none): set after a double push only when a pawn
            of the side now to move attacks the passed-over square (pins ignored); in a game's
            start FEN whenever the FEN names one (``lc0py.chess.history`` has the same rule)
10          side to move (0 white, 1 black)
11, 12      rule-50 ply count, game ply
13          Zobrist key (:func:`key`)
14          flags: bit 0 = Chess960 game (only for printing moves and rebuilding boards)
15          reserved (0)
=========== =====================================================================================

Moves are ``from | to << 6 | promo << 12`` (promo 0 none, 1 knight, 2 bishop, 3 rook, 4 queen:
the piece type index), castling always king-takes-rook (``to`` = the castling rook's square).

**Move order** (:func:`gen_legal`) is lc0's ``GenerateLegalMoves`` order: our pieces by square in
the side-to-move frame (Black's squares mirrored, ``s ^ 56``), and per piece: king steps then
castling a-side, h-side; rook-line then bishop-line moves (a queen gives both); pawn push, double
push, capture towards file − 1, towards file + 1 (promotions Q, R, B, N); knight moves; each
destination set in frame order. lc0 then sorts edges by prior, so ties keep this order only as far
as lc0's unstable sort does.

**Key** (:func:`key`): pieces, side to move, castling rights and the lc0 ep marker — exactly the
facts lc0 compares for repetitions (``ChessBoard::operator==``) and what ``PositionRecord.key``
holds, so repetition counts agree with lc0py's Python history. The ep marker is lc0's (pins
ignored), not python-chess's "legal ep capture" rule.

Sliding attacks: ray scan (per direction, cut the empty-board ray at its first blocker found with
one ``tzcnt``/``lzcnt``): no magic numbers to generate or trust, 4 KiB of tables that stay in L1,
about 30 instructions per slider; a magic look-up would save a few nanoseconds per slider but
needs ~800 KiB of tables frozen into every compiled function.
"""

from __future__ import annotations

import chess
import numpy as np

from lc0py.chess.core.bits import (
    BETWEEN,
    BISHOP_EMPTY,
    KING,
    KNIGHT,
    LINE,
    PAWN_ATTACKS,
    RANK_1,
    RANK_8,
    ROOK_EMPTY,
    U0,
    U1,
    bb,
    bishop_attacks,
    bswap,
    lsb,
    more_than_one,
    popcount,
    rook_attacks,
)
from lc0py.chess.core.jit import njit

POS_WORDS = 16
MAX_MOVES = 256

W_COLOUR = 0  # + colour
W_PIECES = 2  # + piece type
W_CASTLING = 8
W_EP = 9
W_STM = 10
W_RULE50 = 11
W_PLY = 12
W_KEY = 13
W_FLAGS = 14

PAWN, KNIGHT_T, BISHOP, ROOK, QUEEN, KING_T = range(6)
NO_EP = 64
FLAG_CHESS960 = 1

# --- Zobrist tables (fixed seed: keys are stable between runs and processes) ------------------
_rng = np.random.default_rng(0x1C0_5EED)
Z_PIECE = _rng.integers(0, 2**64, size=(12, 64), dtype=np.uint64, endpoint=False)
"""``Z_PIECE[colour * 6 + type, sq]``."""
Z_CASTLE = _rng.integers(0, 2**64, size=64, dtype=np.uint64, endpoint=False)
Z_EP = _rng.integers(0, 2**64, size=65, dtype=np.uint64, endpoint=False)
Z_EP[NO_EP] = 0
Z_STM = np.uint64(_rng.integers(0, 2**64, dtype=np.uint64, endpoint=False))
del _rng


# --- small accessors -----------------------------------------------------------------------------
@njit
def stm(pos: np.ndarray) -> int:
    """Side to move: 0 White, 1 Black."""
    return int(pos[W_STM])


@njit
def rule50(pos: np.ndarray) -> int:
    """Plies since the last capture or pawn move."""
    return int(pos[W_RULE50])


@njit
def key(pos: np.ndarray) -> np.uint64:
    """Zobrist key: pieces, side to move, castling rights, lc0 ep marker (see the module doc)."""
    return pos[W_KEY]


@njit
def ep_square(pos: np.ndarray) -> int:
    """lc0's ep marker square, -1 if none."""
    e = int(pos[W_EP])
    return -1 if e == NO_EP else e


@njit
def compute_key(pos: np.ndarray) -> np.uint64:
    """The Zobrist key from scratch (``play`` updates it incrementally)."""
    k = U0
    for colour in range(2):
        for t in range(6):
            b = pos[W_COLOUR + colour] & pos[W_PIECES + t]
            while b:
                k ^= Z_PIECE[colour * 6 + t, lsb(b)]
                b &= b - U1
    c = pos[W_CASTLING]
    while c:
        k ^= Z_CASTLE[lsb(c)]
        c &= c - U1
    k ^= Z_EP[int(pos[W_EP])]
    if pos[W_STM]:
        k ^= Z_STM
    return k


@njit
def attackers(pos: np.ndarray, sq: int, occ: np.uint64, by: np.uint64, colour_by: int) -> np.uint64:
    """Pieces in mask ``by`` (of colour ``colour_by``) that attack ``sq`` with occupancy ``occ``."""
    rq = pos[W_PIECES + ROOK] | pos[W_PIECES + QUEEN]
    bq = pos[W_PIECES + BISHOP] | pos[W_PIECES + QUEEN]
    a = (
        (KNIGHT[sq] & pos[W_PIECES + KNIGHT_T])
        | (KING[sq] & pos[W_PIECES + KING_T])
        | (PAWN_ATTACKS[1 - colour_by, sq] & pos[W_PIECES + PAWN])
    )
    if ROOK_EMPTY[sq] & rq & by:
        a |= rook_attacks(sq, occ) & rq
    if BISHOP_EMPTY[sq] & bq & by:
        a |= bishop_attacks(sq, occ) & bq
    return a & by


@njit
def in_check(pos: np.ndarray) -> bool:
    """Whether the side to move is in check."""
    us = int(pos[W_STM])
    them = 1 - us
    occ = pos[0] | pos[1]
    ksq = lsb(pos[W_PIECES + KING_T] & pos[us])
    return attackers(pos, ksq, occ, pos[them], them) != U0


@njit
def insufficient_material(pos: np.ndarray) -> bool:
    """lc0's draw by material, ``!ChessBoard::HasMatingMaterial()``: no pawn, rook or queen, and
    fewer than 4 pieces (K v K, K+minor v K), or only kings and bishops all on one square colour."""
    if pos[W_PIECES + PAWN] | pos[W_PIECES + ROOK] | pos[W_PIECES + QUEEN]:
        return False
    if popcount(pos[0] | pos[1]) < 4:
        return True
    if pos[W_PIECES + KNIGHT_T]:
        return False
    bishops = pos[W_PIECES + BISHOP]
    light = (bishops & np.uint64(0x55AA55AA55AA55AA)) != U0
    dark = (bishops & np.uint64(0xAA55AA55AA55AA55)) != U0
    return not (light and dark)


# --- move generation -------------------------------------------------------------------------------
@njit
def _emit(out: np.ndarray, n: int, frm: int, dests: np.uint64, flip: int) -> int:
    """Append ``frm → each square of dests`` in side-to-move-frame order."""
    if flip:
        dests = bswap(dests)
    base = frm
    while dests:
        to = lsb(dests) ^ flip
        out[n] = base | (to << 6)
        n += 1
        dests &= dests - U1
    return n


@njit
def _emit_pawn(out: np.ndarray, n: int, frm: int, to: int) -> int:
    """One pawn move; four moves (Q, R, B, N as lc0 orders them) onto the last rank."""
    m = frm | (to << 6)
    if to >= 56 or to < 8:
        out[n] = m | (4 << 12)
        out[n + 1] = m | (3 << 12)
        out[n + 2] = m | (2 << 12)
        out[n + 3] = m | (1 << 12)
        return n + 4
    out[n] = m
    return n + 1


@njit
def _king_safe(pos: np.ndarray, sq: int, occ: np.uint64, theirs: np.uint64, them: int) -> bool:
    return attackers(pos, sq, occ, theirs, them) == U0


@njit
def _castling(pos: np.ndarray, out: np.ndarray, n: int, us: int, ksq: int, rook: int, occ: np.uint64) -> int:
    """Castling with the rook on ``rook`` (not in check), Chess960 rules, king-takes-rook."""
    them = 1 - us
    theirs = pos[them]
    back = ksq & 56
    a_side = rook < ksq
    kto = back + (2 if a_side else 6)
    rto = back + (3 if a_side else 5)
    kbb = bb(ksq)
    rbb = bb(rook)
    must_be_empty = BETWEEN[ksq, kto] | BETWEEN[rook, rto] | bb(kto) | bb(rto)
    if (occ ^ kbb ^ rbb) & must_be_empty:
        return n
    # The king's path (its own square is safe: not in check) with the king lifted.
    path = BETWEEN[ksq, kto]
    occ_nok = occ ^ kbb
    while path:
        if not _king_safe(pos, lsb(path), occ_nok, theirs, them):
            return n
        path &= path - U1
    # Its destination with king and rook on their new squares (the rook may have shielded it).
    occ_after = occ_nok ^ rbb ^ bb(rto)
    if not _king_safe(pos, kto, occ_after, theirs & ~bb(kto), them):
        return n
    out[n] = ksq | (rook << 6)
    return n + 1


@njit
def gen_legal(pos: np.ndarray, out: np.ndarray) -> int:
    """All legal moves into ``out`` (uint16, at least ``MAX_MOVES`` long); returns their number."""
    us = int(pos[W_STM])
    them = 1 - us
    ours = pos[us]
    theirs = pos[them]
    occ = ours | theirs
    flip = 56 if us else 0
    kings = pos[W_PIECES + KING_T]
    ksq = lsb(kings & ours)
    kbb = bb(ksq)
    not_ours = ~ours

    checkers = attackers(pos, ksq, occ, theirs, them)
    if checkers:
        target = U0 if more_than_one(checkers) else (BETWEEN[ksq, lsb(checkers)] | checkers)
    else:
        target = not_ours

    rq = pos[W_PIECES + ROOK] | pos[W_PIECES + QUEEN]
    bq = pos[W_PIECES + BISHOP] | pos[W_PIECES + QUEEN]
    pinned = U0
    snipers = ((ROOK_EMPTY[ksq] & rq) | (BISHOP_EMPTY[ksq] & bq)) & theirs
    while snipers:
        s = lsb(snipers)
        snipers &= snipers - U1
        between = BETWEEN[ksq, s] & occ
        if between and not more_than_one(between):
            pinned |= between & ours
    ep = int(pos[W_EP])
    pawns = pos[W_PIECES + PAWN]
    knights = pos[W_PIECES + KNIGHT_T]
    step = -8 if us else 8
    second_rank = 6 if us else 1
    n = 0

    src = bswap(ours) if us else ours
    while src:
        frm = lsb(src) ^ flip
        src &= src - U1
        fbb = bb(frm)
        if frm == ksq:
            dests = KING[ksq] & not_ours
            safe = U0
            occ_nok = occ ^ kbb
            while dests:
                to = lsb(dests)
                dests &= dests - U1
                if _king_safe(pos, to, occ_nok, theirs & ~bb(to), them):
                    safe |= bb(to)
            n = _emit(out, n, frm, safe, flip)
            if not checkers:
                rights = pos[W_CASTLING] & ours & pos[W_PIECES + ROOK] & (RANK_8 if us else RANK_1)
                a_side = rights & (kbb - U1)
                h_side = rights & ~(kbb - U1)
                if a_side:
                    n = _castling(pos, out, n, us, ksq, lsb(a_side), occ)
                if h_side:
                    n = _castling(pos, out, n, us, ksq, lsb(h_side), occ)
            continue
        if not target:
            continue  # double check: only the king moves
        mask = target
        if pinned & fbb:
            mask &= LINE[ksq, frm]
        if rq & fbb or bq & fbb:
            if rq & fbb:
                n = _emit(out, n, frm, rook_attacks(frm, occ) & mask, flip)
            if bq & fbb:
                n = _emit(out, n, frm, bishop_attacks(frm, occ) & mask, flip)
        elif pawns & fbb:
            one = frm + step
            if not (occ & bb(one)):
                if mask & bb(one):
                    n = _emit_pawn(out, n, frm, one)
                if (frm >> 3) == second_rank:
                    two = one + step
                    if not (occ & bb(two)) and mask & bb(two):
                        out[n] = frm | (two << 6)
                        n += 1
            f = frm & 7
            for side in range(2):
                if side == 0:
                    if f == 0:
                        continue
                    to = one - 1
                else:
                    if f == 7:
                        continue
                    to = one + 1
                tbb = bb(to)
                if theirs & tbb:
                    if mask & tbb:
                        n = _emit_pawn(out, n, frm, to)
                elif to == ep:
                    # En passant: play it on the occupancy and look for any attack on the king
                    # (covers the horizontal pin of both pawns and checks by the pushed pawn).
                    cap = bb(to - step)
                    occ2 = (occ ^ fbb ^ cap) | tbb
                    if attackers(pos, ksq, occ2, theirs ^ cap, them) == U0:
                        out[n] = frm | (to << 6)
                        n += 1
        elif knights & fbb:
            if not (pinned & fbb):
                n = _emit(out, n, frm, KNIGHT[frm] & mask, flip)
    return n


# --- playing a move ----------------------------------------------------------------------------------
@njit
def _piece_type(pos: np.ndarray, sqbb: np.uint64) -> int:
    t = 0
    while not (pos[W_PIECES + t] & sqbb):
        t += 1
    return t


@njit
def play(pos: np.ndarray, move: int, out: np.ndarray) -> None:
    """Write the position after the legal ``move`` into ``out`` (may not alias ``pos``)."""
    for i in range(POS_WORDS):
        out[i] = pos[i]
    m = np.int64(move)
    frm = m & 63
    to = (m >> 6) & 63
    promo = m >> 12
    us = int(pos[W_STM])
    them = 1 - us
    fbb = bb(frm)
    tbb = bb(to)
    k = pos[W_KEY]
    r50 = int(pos[W_RULE50]) + 1
    old_ep = int(pos[W_EP])
    new_ep = NO_EP
    castling = pos[W_CASTLING]
    our_rank = RANK_8 if us else RANK_1
    t = _piece_type(pos, fbb)
    if t == KING_T and pos[us] & tbb:  # castling, king takes rook
        back = frm & 56
        a_side = to < frm
        kto = back + (2 if a_side else 6)
        rto = back + (3 if a_side else 5)
        out[us] ^= fbb | tbb
        out[W_PIECES + KING_T] ^= fbb
        out[W_PIECES + ROOK] ^= tbb
        out[us] |= bb(kto) | bb(rto)
        out[W_PIECES + KING_T] |= bb(kto)
        out[W_PIECES + ROOK] |= bb(rto)
        k ^= Z_PIECE[us * 6 + KING_T, frm] ^ Z_PIECE[us * 6 + KING_T, kto]
        k ^= Z_PIECE[us * 6 + ROOK, to] ^ Z_PIECE[us * 6 + ROOK, rto]
        castling &= ~our_rank
    else:
        if pos[them] & tbb:
            ct = _piece_type(pos, tbb)
            out[W_PIECES + ct] ^= tbb
            out[them] ^= tbb
            k ^= Z_PIECE[them * 6 + ct, to]
            r50 = 0
        out[us] ^= fbb | tbb
        out[W_PIECES + t] ^= fbb
        nt = t
        if t == PAWN:
            r50 = 0
            diff = to - frm
            if diff == 16 or diff == -16:
                sq = (frm + to) >> 1
                if PAWN_ATTACKS[us, sq] & pos[W_PIECES + PAWN] & pos[them]:
                    new_ep = sq
            elif to == old_ep and diff != 8 and diff != -8:
                cap_sq = to - 8 if us == 0 else to + 8
                cbb = bb(cap_sq)
                out[W_PIECES + PAWN] ^= cbb
                out[them] ^= cbb
                k ^= Z_PIECE[them * 6 + PAWN, cap_sq]
            if promo:
                nt = promo
        elif t == KING_T:
            castling &= ~our_rank
        out[W_PIECES + nt] |= tbb
        k ^= Z_PIECE[us * 6 + t, frm] ^ Z_PIECE[us * 6 + nt, to]
        castling &= ~(fbb | tbb)
    changed = castling ^ pos[W_CASTLING]
    while changed:
        k ^= Z_CASTLE[lsb(changed)]
        changed &= changed - U1
    k ^= Z_EP[old_ep] ^ Z_EP[new_ep] ^ Z_STM
    out[W_CASTLING] = castling
    out[W_EP] = new_ep
    out[W_STM] = them
    out[W_RULE50] = r50
    out[W_PLY] = pos[W_PLY] + U1
    out[W_KEY] = k


# --- repetitions (lc0 PositionHistory) --------------------------------------------------------------
@njit
def repetitions(keys: np.ndarray, rule50s: np.ndarray, n: int) -> tuple[int, int]:
    """lc0's repetition count of the last of ``n`` positions and the plies since its previous
    occurrence (``GetRepetitions``, ``GetPliesSincePrevRepetition``; 0, 0 if none).

    lc0 (``ComputeLastMoveRepetitions``): 0 if rule50 < 4; else look at the positions 4, 6, … plies
    back, compare first, stop at one with rule50 < 2; count = 1 + that position's own count (which
    is the same scan from there, so the chain is followed here).
    """
    last = n - 1
    k = keys[last]
    count = 0
    cycle = 0
    j = last
    while rule50s[j] >= 4:
        found = -1
        idx = j - 4
        while idx >= 0:
            if keys[idx] == k:
                found = idx
                break
            if rule50s[idx] < 2:
                break
            idx -= 2
        if found < 0:
            break
        if count == 0:
            cycle = last - found
        count += 1
        j = found
    return count, cycle


# --- Python-level conversion (set-up, tests, the controller) -----------------------------------------
def _lc0_ep_marker(board: chess.Board, from_fen: bool) -> int:
    ep = board.ep_square
    if ep is None:
        return NO_EP
    if from_fen:
        return ep
    us = board.turn
    attackers_bb = chess.BB_PAWN_ATTACKS[not us][ep] & board.pawns & board.occupied_co[us]
    return ep if attackers_bb else NO_EP


def pos_from_board(board: chess.Board, *, from_fen: bool | None = None) -> np.ndarray:
    """The position of a python-chess board (Chess960 boards included).

    The ep marker follows lc0 (``lc0py.chess.history``): a board without moves is a start FEN, whose
    ep square is kept as it is; after a move the marker is kept only if a pawn of the side to move
    attacks it. ``from_fen`` overrides that guess."""
    if from_fen is None:
        from_fen = not board.move_stack
    pos = np.zeros(POS_WORDS, dtype=np.uint64)
    pos[0] = board.occupied_co[chess.WHITE]
    pos[1] = board.occupied_co[chess.BLACK]
    for t, mask in enumerate(
        (board.pawns, board.knights, board.bishops, board.rooks, board.queens, board.kings)
    ):
        pos[W_PIECES + t] = mask
    pos[W_CASTLING] = board.clean_castling_rights()
    pos[W_EP] = _lc0_ep_marker(board, from_fen)
    pos[W_STM] = 0 if board.turn == chess.WHITE else 1
    pos[W_RULE50] = board.halfmove_clock
    pos[W_PLY] = board.ply()
    pos[W_FLAGS] = FLAG_CHESS960 if board.chess960 else 0
    pos[W_KEY] = compute_key(pos)
    return pos


def pos_from_record(record, ply: int = 0, chess960: bool = False) -> np.ndarray:
    """The position of a ``lc0py.chess.encoding.PositionRecord`` (its ep marker is lc0's already)."""
    pos = np.zeros(POS_WORDS, dtype=np.uint64)
    p = record.pieces
    pos[0] = p[0] | p[1] | p[2] | p[3] | p[4] | p[5]
    pos[1] = p[6] | p[7] | p[8] | p[9] | p[10] | p[11]
    for t in range(6):
        pos[W_PIECES + t] = p[t] | p[6 + t]
    pos[W_CASTLING] = record.castling
    pos[W_EP] = record.ep if record.ep >= 0 else NO_EP
    pos[W_STM] = 0 if record.turn else 1
    pos[W_RULE50] = record.rule50
    pos[W_PLY] = ply
    pos[W_FLAGS] = FLAG_CHESS960 if chess960 else 0
    pos[W_KEY] = compute_key(pos)
    return pos


def board_from_pos(pos: np.ndarray) -> chess.Board:
    """A python-chess board of the position (move stack empty; ep square = lc0's marker)."""
    board = chess.Board(None, chess960=bool(int(pos[W_FLAGS]) & FLAG_CHESS960))
    white, black = int(pos[0]), int(pos[1])
    board.pawns, board.knights, board.bishops = int(pos[2]), int(pos[3]), int(pos[4])
    board.rooks, board.queens, board.kings = int(pos[5]), int(pos[6]), int(pos[7])
    board.occupied_co[chess.WHITE] = white
    board.occupied_co[chess.BLACK] = black
    board.occupied = white | black
    board.turn = int(pos[W_STM]) == 0
    board.castling_rights = int(pos[W_CASTLING])
    ep = int(pos[W_EP])
    board.ep_square = None if ep == NO_EP else ep
    board.halfmove_clock = int(pos[W_RULE50])
    board.fullmove_number = int(pos[W_PLY]) // 2 + 1
    return board


def is_castling(pos: np.ndarray, move: int) -> bool:
    """Whether ``move`` (legal in ``pos``) is castling: the king onto its own rook."""
    frm, to = move & 63, (move >> 6) & 63
    us = int(pos[W_STM])
    own = int(pos[us])
    return bool(int(pos[W_PIECES + KING_T]) & own & (1 << frm)) and bool(own & (1 << to))


def to_uci(move: int, chess960: bool, pos: np.ndarray) -> str:
    """lc0's UCI text of ``move`` in ``pos``: castling ``e1g1``/``e1c1`` when not Chess960 and the
    king stands on the e-file with the rook on the a- or h-file, else king-takes-rook (``e1h1``);
    promotions with a lowercase suffix."""
    move = int(move)
    frm, to, promo = move & 63, (move >> 6) & 63, move >> 12
    if not chess960 and is_castling(pos, move) and frm & 7 == 4 and to & 7 in (0, 7):
        to = (to & 56) | (6 if to & 7 == 7 else 2)
    text = chess.square_name(frm) + chess.square_name(to)
    if promo:
        text += "nbrq"[promo - 1]
    return text


def from_chess_move(move: chess.Move, board: chess.Board) -> int:
    """The packed move of a python-chess move legal in ``board`` (castling → king takes rook)."""
    frm, to = move.from_square, move.to_square
    if board.is_castling(move) and not board.occupied_co[board.turn] & (1 << to):
        to = (to & 56) | (7 if to > frm else 0)
    promo = move.promotion - 1 if move.promotion else 0
    return frm | to << 6 | promo << 12


def to_chess_move(move: int, board: chess.Board) -> chess.Move:
    """The python-chess move of a packed move legal in ``board`` (standard boards get ``e1g1``)."""
    move = int(move)
    frm, to, promo = move & 63, (move >> 6) & 63, move >> 12
    ours = board.occupied_co[board.turn]
    if not board.chess960 and board.kings & ours & (1 << frm) and ours & (1 << to):
        to = (to & 56) | (6 if to > frm else 2)
    return chess.Move(frm, to, promo + 1 if promo else None)
