"""FEN/EPD lines and games to lc0's input planes, and raw outputs to top-k policies, compiled.

The bulk evaluator's hot path, with no Python object per position: a chunk of input text (one
``bytes`` buffer, records as byte ranges) goes in, ``PlanesBatch`` rows come out. Positions are
the search core's (``lc0py.search.core.board``): the FEN is parsed here, every UCI move is checked
against the core's legal move list and played with its ``play``, repetitions come from its
``repetitions``, and the planes from its ``encode`` (the one checked against
``lc0py.chess.encoding``). ``tests/tools/bulk/test_compiled.py`` compares the results with
``PositionHistory.from_fen(...).encode(...)`` and with the public API's ``legal_policy``.

A record is ``FEN``, ``FEN | uci uci ...`` (lc0py's positions lines), an EPD line (4 fields, then
opcodes; ``hmvc``/``fmvn`` read) or ``startpos``. With ``all_plies`` every position of the record
is emitted (a game: ply 0 .. len(moves)), else only the last one.

Checks (each a code of ``ERRORS``): the FEN's syntax, exactly one king a side, no pawn on the
first or last rank, castling rights with their king and rook, lc0's en-passant rules, the side not
to move not in check (as ``eval`` and the UCI engine refuse it), every move legal.
"""

from __future__ import annotations

import numpy as np

from lc0py.search.core import board as B
from lc0py.search.core.bits import U0, U1, lsb
from lc0py.search.core.encode import encode, policy_indices
from lc0py.search.core.jit import njit

ERRORS = (
    "",
    "bad piece placement",
    "bad side to move (want w or b)",
    "bad castling rights",
    "bad en passant square",
    "bad move counters",
    "needs exactly one king a side",
    "pawn on the first or last rank",
    "the side not to move is in check",
    "castling right without its king or rook",
    "bad move text",
    "illegal move",
    "too many moves",
    "missing FEN",
    "more than one '|'",
)
SKIPPED = -1  # blank line or '#' comment: not a position, not an error
MAX_GAME_PLIES = 2048

_SPACE = np.uint8(32)
_PIPE = np.uint8(124)
_PIECE_CHARS = np.frombuffer(b"pnbrqk", dtype=np.uint8)
_START = np.frombuffer(b"rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", dtype=np.uint8)
_STARTPOS = np.frombuffer(b"startpos", dtype=np.uint8)
_HMVC = np.frombuffer(b"hmvc", dtype=np.uint8)
_FMVN = np.frombuffer(b"fmvn", dtype=np.uint8)


@njit
def _is_space(c: np.uint8) -> bool:
    return c == 32 or c == 9 or c == 13 or c == 10


@njit
def _tokens(buf: np.ndarray, s: int, e: int, out: np.ndarray) -> int:
    """Whitespace-separated tokens of ``buf[s:e]`` as (start, end) rows of ``out``; their number
    (at most ``len(out)``; the rest are dropped, the caller checks)."""
    n = 0
    i = s
    while i < e and n < out.shape[0]:
        while i < e and _is_space(buf[i]):
            i += 1
        if i >= e:
            break
        j = i
        while j < e and not _is_space(buf[j]):
            j += 1
        out[n, 0] = i
        out[n, 1] = j
        n += 1
        i = j
    return n


@njit
def _number(buf: np.ndarray, s: int, e: int) -> int:
    """The decimal number ``buf[s:e]`` (a trailing ';' allowed), -1 if it is not one."""
    if e > s and buf[e - 1] == 59:
        e -= 1
    if e <= s or e - s > 9:
        return -1
    v = 0
    for i in range(s, e):
        c = buf[i]
        if c < 48 or c > 57:
            return -1
        v = v * 10 + int(c - 48)
    return v


@njit
def _word_is(buf: np.ndarray, s: int, e: int, word: np.ndarray) -> bool:
    if e - s != len(word):
        return False
    for i in range(len(word)):
        c = buf[s + i]
        if 65 <= c <= 90:
            c = c + 32
        if c != word[i]:
            return False
    return True


@njit
def _castling_square(pos: np.ndarray, colour: int, file_char: int, king_side: int) -> int:
    """The castling rook's square for one right (X-FEN K/Q: the outermost rook on that side of
    the king; Shredder-FEN: the rook on that file), -1 if there is none."""
    rank = 0 if colour == 0 else 56
    kings = pos[B.W_PIECES + B.KING_T] & pos[colour]
    rooks = pos[B.W_PIECES + B.ROOK] & pos[colour]
    if (kings & (np.uint64(0xFF) << np.uint64(rank))) == U0:
        return -1
    kfile = lsb(kings) - rank
    if file_char >= 0:
        sq = rank + file_char
        return sq if rooks & (U1 << np.uint64(sq)) else -1
    if king_side == 1:
        for f in range(7, kfile, -1):
            if rooks & (U1 << np.uint64(rank + f)):
                return rank + f
    else:
        for f in range(0, kfile):
            if rooks & (U1 << np.uint64(rank + f)):
                return rank + f
    return -1


@njit
def parse_fen(buf: np.ndarray, tok: np.ndarray, ntok: int, pos: np.ndarray) -> int:
    """The position of the FEN/EPD tokens ``tok[:ntok]`` into ``pos``; 0 or an ``ERRORS`` code."""
    for i in range(B.POS_WORDS):
        pos[i] = U0
    if ntok < 1:
        return 1
    # 1. placement, rank 8 first
    rank = 7
    file = 0
    for i in range(tok[0, 0], tok[0, 1]):
        c = buf[i]
        if c == 47:  # '/'
            if file != 8 or rank == 0:
                return 1
            rank -= 1
            file = 0
        elif 49 <= c <= 56:
            file += int(c - 48)
            if file > 8:
                return 1
        else:
            lower = c + 32 if 65 <= c <= 90 else c
            t = -1
            for k in range(6):
                if _PIECE_CHARS[k] == lower:
                    t = k
            if t < 0 or file > 7:
                return 1
            colour = 0 if c != lower else 1
            sq = np.uint64(rank * 8 + file)
            pos[colour] |= U1 << sq
            pos[B.W_PIECES + t] |= U1 << sq
            file += 1
    if rank != 0 or file != 8:
        return 1
    # 2. side to move
    black = False  # missing fields take python-chess's defaults: w - -
    if ntok >= 2:
        if tok[1, 1] - tok[1, 0] != 1 or (buf[tok[1, 0]] != 119 and buf[tok[1, 0]] != 98):
            return 2
        black = buf[tok[1, 0]] == 98
    pos[B.W_STM] = U1 if black else U0
    kings = pos[B.W_PIECES + B.KING_T]
    if B.popcount(kings & pos[0]) != 1 or B.popcount(kings & pos[1]) != 1:
        return 6
    if pos[B.W_PIECES + B.PAWN] & np.uint64(0xFF000000000000FF):
        return 7
    # 3. castling
    chess960 = False
    s, e = (tok[2, 0], tok[2, 1]) if ntok >= 3 else (0, 0)
    if ntok >= 3 and not (e - s == 1 and buf[s] == 45):
        for i in range(s, e):
            c = buf[i]
            colour = 0 if 65 <= c <= 90 else 1
            lower = c + 32 if colour == 0 else c
            if lower == 107:
                sq = _castling_square(pos, colour, -1, 1)
            elif lower == 113:
                sq = _castling_square(pos, colour, -1, 0)
            elif 97 <= lower <= 104:
                sq = _castling_square(pos, colour, int(lower - 97), 0)
            else:
                return 3
            if sq < 0:
                return 9
            pos[B.W_CASTLING] |= U1 << np.uint64(sq)
            king = lsb(kings & pos[colour])
            if king & 7 != 4 or (sq & 7 != 0 and sq & 7 != 7):
                chess960 = True
    # 4. en passant (lc0: right rank, empty, the double-pushed pawn in front of it)
    s, e = (tok[3, 0], tok[3, 1]) if ntok >= 4 else (0, 0)
    pos[B.W_EP] = np.uint64(B.NO_EP)
    if ntok >= 4 and not (e - s == 1 and buf[s] == 45):
        if e - s != 2 or not (97 <= buf[s] <= 104) or not (49 <= buf[s + 1] <= 56):
            return 4
        ep = int(buf[s] - 97) + 8 * int(buf[s + 1] - 49)
        pushed = ep + 8 if black else ep - 8
        occ = pos[0] | pos[1]
        pusher = pos[B.W_PIECES + B.PAWN] & pos[0 if black else 1]
        if (
            ep // 8 != (2 if black else 5)
            or occ & (U1 << np.uint64(ep))
            or not (pusher & (U1 << np.uint64(pushed)))
        ):
            return 4
        pos[B.W_EP] = np.uint64(ep)
    # 5. counters: FEN fields 5 and 6, or EPD opcodes hmvc/fmvn
    half = 0
    full = 1
    if ntok >= 5:
        h = _number(buf, tok[4, 0], tok[4, 1])
        if h >= 0:
            half = h
            if ntok >= 6:
                f = _number(buf, tok[5, 0], tok[5, 1])
                if f < 0:
                    return 5
                full = max(f, 1)
        else:
            for k in range(4, ntok - 1):
                if _word_is(buf, tok[k, 0], tok[k, 1], _HMVC):
                    v = _number(buf, tok[k + 1, 0], tok[k + 1, 1])
                    if v < 0:
                        return 5
                    half = v
                elif _word_is(buf, tok[k, 0], tok[k, 1], _FMVN):
                    v = _number(buf, tok[k + 1, 0], tok[k + 1, 1])
                    if v < 0:
                        return 5
                    full = max(v, 1)
    pos[B.W_RULE50] = np.uint64(half)
    pos[B.W_PLY] = np.uint64(2 * (full - 1) + (1 if black else 0))
    pos[B.W_FLAGS] = np.uint64(B.FLAG_CHESS960 if chess960 else 0)
    pos[B.W_KEY] = B.compute_key(pos)
    # the side not to move may not be in check (its king could be taken)
    pos[B.W_STM] = U0 if black else U1
    bad = B.in_check(pos)
    pos[B.W_STM] = U1 if black else U0
    if bad:
        return 8
    return 0


@njit
def parse_move(buf: np.ndarray, s: int, e: int, pos: np.ndarray, legal: np.ndarray, nlegal: int) -> int:
    """The core move of UCI text ``buf[s:e]`` if it is legal in ``pos`` (lc0's rules: ``e1g1`` or
    king-takes-rook castles, a 4-letter pawn move to the last rank promotes to a knight), else -1."""
    n = e - s
    if n != 4 and n != 5:
        return -1
    for k in (0, 2):
        if not (97 <= buf[s + k] <= 104) or not (49 <= buf[s + k + 1] <= 56):
            return -1
    frm = int(buf[s] - 97) + 8 * int(buf[s + 1] - 49)
    to = int(buf[s + 2] - 97) + 8 * int(buf[s + 3] - 49)
    promo = 0
    if n == 5:
        c = buf[s + 4]
        c = c + 32 if 65 <= c <= 90 else c
        if c == 110:
            promo = 1
        elif c == 98:
            promo = 2
        elif c == 114:
            promo = 3
        elif c == 113:
            promo = 4
        else:
            return -1
    us = int(pos[B.W_STM])
    fb = U1 << np.uint64(frm)
    if promo == 0 and pos[B.W_PIECES + B.PAWN] & pos[us] & fb and (to // 8 == 0 or to // 8 == 7):
        promo = 1
    if pos[B.W_PIECES + B.KING_T] & pos[us] & fb and not (pos[us] & (U1 << np.uint64(to))):
        if to // 8 == frm // 8 and (to - frm == 2 or frm - to == 2):
            # e1g1 / e1c1: the castling rook on that side (king takes rook in the core)
            rights = pos[B.W_CASTLING] & (np.uint64(0xFF) << np.uint64(frm - frm % 8))
            best = np.int64(-1)
            while rights:
                r = np.int64(lsb(rights))
                rights &= rights - U1
                if (r > frm) == (to > frm):
                    best = r
            if best >= 0:
                to = best
    code = frm | (to << 6) | (promo << 12)
    for i in range(nlegal):
        if int(legal[i]) == code:
            return code
    return -1


@njit
def encode_records(
    buf: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    all_plies: bool,
    input_format: int,
    fill: int,
    out_masks: np.ndarray,
    out_values: np.ndarray,
    out_pos: np.ndarray,
    out_transform: np.ndarray,
    out_record: np.ndarray,
    out_ply: np.ndarray,
    status: np.ndarray,
    err_arg: np.ndarray,
) -> int:
    """Every record ``buf[starts[r]:ends[r]]`` to planes rows (``out_*``; ``out_pos`` the
    position, ``out_record``/``out_ply`` where it came from); ``status[r]``: 0, ``SKIPPED`` or an
    ``ERRORS`` code (``err_arg[r]``: the 1-based number of the bad move). Returns the rows written;
    a record that does not fit in the rows left is marked ``-2`` (the caller gives more room)."""
    tok = np.zeros((MAX_GAME_PLIES + 16, 2), np.int64)
    hist = np.zeros((MAX_GAME_PLIES + 1, B.POS_WORDS), np.uint64)
    keys = np.zeros(MAX_GAME_PLIES + 1, np.uint64)
    r50 = np.zeros(MAX_GAME_PLIES + 1, np.int32)
    reps = np.zeros(MAX_GAME_PLIES + 1, np.int32)
    legal = np.zeros(B.MAX_MOVES, np.uint16)
    capacity = out_masks.shape[0]
    rows = 0
    for r in range(len(starts)):
        s, e = int(starts[r]), int(ends[r])
        err_arg[r] = 0
        while s < e and _is_space(buf[s]):
            s += 1
        while e > s and _is_space(buf[e - 1]):
            e -= 1
        if s == e or buf[s] == 35:
            status[r] = SKIPPED
            continue
        bar = -1
        bars = 0
        for i in range(s, e):
            if buf[i] == _PIPE:
                bars += 1
                if bar < 0:
                    bar = i
        if bars > 1:
            status[r] = 14
            continue
        fen_end = bar if bar >= 0 else e
        nf = _tokens(buf, s, fen_end, tok)
        if nf == 0:
            status[r] = 13
            continue
        if nf == 1 and _word_is(buf, tok[0, 0], tok[0, 1], _STARTPOS):
            code = parse_fen(_START, _START_TOKENS, 6, hist[0])
        else:
            code = parse_fen(buf, tok, nf, hist[0])
        if code != 0:
            status[r] = code
            continue
        nm = 0
        if bar >= 0:
            nm = _tokens(buf, bar + 1, e, tok)
            if nm >= MAX_GAME_PLIES:
                status[r] = 12
                continue
        need = nm + 1 if all_plies else 1
        if rows + need > capacity:
            status[r] = -2
            continue
        keys[0] = B.key(hist[0])
        r50[0] = B.rule50(hist[0])
        reps[0] = 0
        code = 0
        for m in range(nm):
            nlegal = B.gen_legal(hist[m], legal)
            mv = parse_move(buf, tok[m, 0], tok[m, 1], hist[m], legal, nlegal)
            if mv < 0:
                length = tok[m, 1] - tok[m, 0]
                code = 11 if length == 4 or length == 5 else 10
                err_arg[r] = m + 1
                break
            B.play(hist[m], mv, hist[m + 1])
            keys[m + 1] = B.key(hist[m + 1])
            r50[m + 1] = B.rule50(hist[m + 1])
            reps[m + 1] = B.repetitions(keys, r50, m + 2)[0]
        if code != 0:
            status[r] = code
            continue
        status[r] = 0
        first = 0 if all_plies else nm
        for k in range(first, nm + 1):
            out_transform[rows] = encode(
                hist, reps, k + 1, input_format, fill, out_masks[rows], out_values[rows]
            )
            for w in range(B.POS_WORDS):
                out_pos[rows, w] = hist[k, w]
            out_record[rows] = r
            out_ply[rows] = k
            rows += 1
    return rows


def _token_spans(text: bytes) -> np.ndarray:
    spans, start = [], 0
    for word in text.split(b" "):
        spans.append((start, start + len(word)))
        start += len(word) + 1
    return np.array(spans, dtype=np.int64)


_START_TOKENS = _token_spans(_START.tobytes())


@njit
def display_move(pos: np.ndarray, move: int) -> int:
    """``move`` as UCI writes it: standard-chess castling as the king's two-square step."""
    frm = move & 63
    to = (move >> 6) & 63
    if int(pos[B.W_FLAGS]) & B.FLAG_CHESS960:
        return move
    us = int(pos[B.W_STM])
    if pos[B.W_PIECES + B.KING_T] & pos[us] & (U1 << np.uint64(frm)) and pos[us] & (U1 << np.uint64(to)):
        if frm & 7 == 4 and (to & 7 == 0 or to & 7 == 7):
            to = (to & 56) | (6 if to & 7 == 7 else 2)
            return frm | (to << 6)
    return move


@njit
def summarise_rows(
    pos: np.ndarray,
    transform: np.ndarray,
    policy: np.ndarray,
    top: int,
    out_moves: np.ndarray,
    out_probs: np.ndarray,
    out_legal: np.ndarray,
) -> None:
    """Per row: the softmax (temperature 1, float64, as ``lc0py.api.evaluation.legal_policy``)
    of the legal moves' logits, the ``top`` most likely (all: ``top`` >= 256) into
    ``out_moves`` (display codes, -1 padding) and ``out_probs``, most likely first."""
    legal = np.zeros(B.MAX_MOVES, np.uint16)
    idx = np.zeros(B.MAX_MOVES, np.int64)
    z = np.zeros(B.MAX_MOVES, np.float64)
    for r in range(pos.shape[0]):
        n = B.gen_legal(pos[r], legal)
        out_legal[r] = n
        policy_indices(pos[r], legal, n, int(transform[r]), idx)
        zmax = -np.inf
        for i in range(n):
            z[i] = np.float64(policy[r, idx[i]])
            zmax = max(zmax, z[i])
        total = 0.0
        for i in range(n):
            z[i] = np.exp(z[i] - zmax)
            total += z[i]
        for i in range(n):
            z[i] /= total
        order = np.argsort(-z[:n], kind="mergesort")
        k = min(top, n)
        for j in range(out_moves.shape[1]):
            if j < k:
                out_moves[r, j] = display_move(pos[r], int(legal[order[j]]))
                out_probs[r, j] = z[order[j]]
            else:
                out_moves[r, j] = -1
                out_probs[r, j] = 0.0
