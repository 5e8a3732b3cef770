"""FEN/EPD lines and games to lc0's input planes, and raw outputs to top-k policies, compiled.

The hot path of the bulk evaluator, ``lc0py eval`` and ``Net.evaluate_many``, with no Python
object per position: a chunk of input text (one ``bytes`` buffer, records as byte ranges) goes in,
``PlanesBatch`` rows come out. Positions are
the search core's (``lc0py.chess.core.board``): the FEN is parsed here, every UCI move is checked
against the core's legal move list and played with its ``play``, repetitions come from its
``repetitions``, and the planes from its ``encode`` (the one checked against
``lc0py.chess.encoding``). ``tests/chess/core/test_records.py`` compares the results with
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

from lc0py.chess.core import board as B
from lc0py.chess.core.bits import U0, U1, lsb
from lc0py.chess.core.encode import encode, policy_indices
from lc0py.chess.core.jit import njit

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


# --- the public API's policy: python-chess's move order, numpy's softmax, bit for bit ----------
# ``lc0py.api.evaluation.legal_policy`` takes the legal moves in python-chess's order, computes
# ``e = exp(z - max z)`` and ``e / e.sum()`` with numpy (whose sum is pairwise) and sorts stably,
# so ties and the sum's rounding depend on that order. The functions below reproduce it exactly:
# python-chess's generation order as a sort key, numpy's pairwise sum; ``exp`` itself is left to
# numpy (``lc0py.api.records``), whose SIMD exp may differ from numba's in the last bit.


@njit
def pychess_rank(pos: np.ndarray, move: int, check: bool) -> int:
    """Where ``move`` (a core move) comes in python-chess's ``generate_legal_moves``: not in
    check, piece moves (king included) by from-square then to-square, both descending; castling
    by rook square descending; pawn captures (promotions Q, R, B, N); single pushes; double
    pushes; en passant. In check, king moves come first, then the same order without castling."""
    frm = move & 63
    to = (move >> 6) & 63
    promo = (move >> 12) & 7
    us = int(pos[B.W_STM])
    fb = U1 << np.uint64(frm)
    tb = U1 << np.uint64(to)
    if pos[B.W_PIECES + B.KING_T] & fb:
        if pos[us] & tb:  # king takes its own rook: castling
            return (2 << 20) + (63 - to)
        if check:
            return 63 - to
        return (1 << 20) + (63 - frm) * 64 + (63 - to)
    if not (pos[B.W_PIECES + B.PAWN] & fb):
        return (1 << 20) + (63 - frm) * 64 + (63 - to)
    order = 4 - promo if promo else 0
    if frm & 7 != to & 7:
        if not ((pos[0] | pos[1]) & tb):
            return (6 << 20) + (63 - frm)  # en passant
        return (3 << 20) + ((63 - frm) * 64 + (63 - to)) * 4 + order
    if to - frm == 16 or frm - to == 16:
        return (5 << 20) + (63 - to)
    return (4 << 20) + (63 - to) * 4 + order


@njit
def legal_logits(
    pos: np.ndarray,
    transform: np.ndarray,
    policy: np.ndarray,
    temperature: float,
    out_codes: np.ndarray,
    out_z: np.ndarray,
    out_n: np.ndarray,
) -> None:
    """Per row: the legal moves in python-chess's order (display codes, ``out_codes[r, :n]``)
    and ``z - max z`` with ``z`` = their logits as float64 divided by ``temperature``
    (``out_z[r, :n]``, the rest 0), as ``legal_policy`` computes them; ``out_n[r]`` = n."""
    legal = np.zeros(B.MAX_MOVES, np.uint16)
    idx = np.zeros(B.MAX_MOVES, np.int64)
    rank = np.zeros(B.MAX_MOVES, np.int64)
    for r in range(pos.shape[0]):
        n = B.gen_legal(pos[r], legal)
        out_n[r] = n
        for j in range(out_z.shape[1]):
            out_z[r, j] = 0.0
        if n == 0:
            continue
        policy_indices(pos[r], legal, n, int(transform[r]), idx)
        check = B.in_check(pos[r])
        for i in range(n):
            rank[i] = pychess_rank(pos[r], int(legal[i]), check)
        order = np.argsort(rank[:n], kind="mergesort")
        zmax = -np.inf
        for j in range(n):
            i = order[j]
            z = np.float64(policy[r, idx[i]]) / temperature
            out_z[r, j] = z
            if z > zmax:
                zmax = z
        for j in range(n):
            out_z[r, j] = out_z[r, j] - zmax
            out_codes[r, j] = display_move(pos[r], int(legal[order[j]]))


@njit
def _block_sum(a: np.ndarray, start: int, n: int) -> float:
    """numpy's pairwise sum of at most 128 values: plain below 8, else 8 accumulators."""
    if n < 8:
        res = 0.0
        for i in range(n):
            res += a[start + i]
        return res
    r0, r1, r2, r3 = a[start], a[start + 1], a[start + 2], a[start + 3]
    r4, r5, r6, r7 = a[start + 4], a[start + 5], a[start + 6], a[start + 7]
    i = 8
    while i < n - n % 8:
        s = start + i
        r0 += a[s]
        r1 += a[s + 1]
        r2 += a[s + 2]
        r3 += a[s + 3]
        r4 += a[s + 4]
        r5 += a[s + 5]
        r6 += a[s + 6]
        r7 += a[s + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[start + i]
        i += 1
    return res


@njit
def pairwise_sum(a: np.ndarray, start: int, n: int) -> float:
    """``a[start:start + n].sum()`` as numpy computes it (pairwise: blocks of at most 128 summed
    with 8 accumulators, halves above that), to the last bit, for ``n`` <= 256 (a legal move
    list; one halving is all numpy does there; not recursive: numba's cache and recursion
    do not mix)."""
    if n <= 128:
        return _block_sum(a, start, n)
    half = n // 2
    half -= half % 8
    return _block_sum(a, start, half) + _block_sum(a, start + half, n - half)


@njit
def softmax_sorted(
    e: np.ndarray, n: np.ndarray, codes: np.ndarray, out_codes: np.ndarray, out_probs: np.ndarray
) -> None:
    """Per row: ``e[r, :n] / sum`` (numpy's sum), most likely first with ties in the given order
    (a stable sort, as ``legal_policy``'s ``argsort(kind="stable")``)."""
    probs = np.zeros(B.MAX_MOVES, np.float64)
    for r in range(e.shape[0]):
        k = int(n[r])
        total = pairwise_sum(e[r], 0, k)
        for j in range(k):
            probs[j] = e[r, j] / total
        order = np.argsort(-probs[:k], kind="mergesort")
        for j in range(k):
            out_codes[r, j] = codes[r, order[j]]
            out_probs[r, j] = probs[order[j]]


_FEN_PIECES = np.frombuffer(b"PNBRQKpnbrqk", dtype=np.uint8)
FEN_BYTES = 96  # the longest FEN: 64 + 7 slashes + side, castling, ep, counters


@njit
def write_fen(pos: np.ndarray, out: np.ndarray) -> int:
    """``pos`` as python-chess's ``Board.fen()`` writes it (X-FEN castling: ``K``/``Q`` for the
    outermost rook, its file otherwise; the ep square only when an en-passant capture is legal)
    into ``out``; the length."""
    n = 0
    for rank in range(7, -1, -1):
        empty = 0
        for file in range(8):
            sq = np.uint64(rank * 8 + file)
            bit = U1 << sq
            piece = -1
            for t in range(6):
                if pos[B.W_PIECES + t] & bit:
                    piece = t + (0 if pos[0] & bit else 6)
            if piece < 0:
                empty += 1
                continue
            if empty:
                out[n] = 48 + empty
                n += 1
                empty = 0
            out[n] = _FEN_PIECES[piece]
            n += 1
        if empty:
            out[n] = 48 + empty
            n += 1
        if rank:
            out[n] = 47
            n += 1
    black = int(pos[B.W_STM]) == 1
    out[n] = 32
    out[n + 1] = 98 if black else 119
    out[n + 2] = 32
    n += 3
    start = n
    for colour in range(2):
        back = np.uint64(0xFF) << np.uint64(0 if colour == 0 else 56)
        kings = pos[B.W_PIECES + B.KING_T] & pos[colour] & back
        rooks = pos[B.W_PIECES + B.ROOK] & pos[colour] & back
        rights = pos[B.W_CASTLING] & back
        if kings == U0:
            continue
        kfile = lsb(kings) & 7
        for f in range(7, -1, -1):
            if not (rights & (U1 << np.uint64((56 if colour else 0) + f))):
                continue
            a_side = f < kfile
            outer = True
            for g in range(8):
                if g != f and rooks & (U1 << np.uint64((56 if colour else 0) + g)) and (g < f) == a_side:
                    outer = False
            ch = (113 if a_side else 107) if outer else 97 + f
            out[n] = ch - 32 if colour == 0 else ch
            n += 1
    if n == start:
        out[n] = 45
        n += 1
    out[n] = 32
    n += 1
    ep = int(pos[B.W_EP])
    shown = False
    if ep != B.NO_EP:
        legal = np.zeros(B.MAX_MOVES, np.uint16)
        count = B.gen_legal(pos, legal)
        pawns = pos[B.W_PIECES + B.PAWN]
        for i in range(count):
            m = int(legal[i])
            if (m >> 6) & 63 == ep and pawns & (U1 << np.uint64(m & 63)):
                shown = True
    if shown:
        out[n] = 97 + (ep & 7)
        out[n + 1] = 49 + (ep >> 3)
        n += 2
    else:
        out[n] = 45
        n += 1
    n = _write_number(out, n, int(pos[B.W_RULE50]))
    return _write_number(out, n, int(pos[B.W_PLY]) // 2 + 1)


@njit
def _write_number(out: np.ndarray, n: int, value: int) -> int:
    """`` <value>`` at ``out[n:]``; the new length."""
    out[n] = 32
    n += 1
    digits = 1
    v = value
    while v >= 10:
        v //= 10
        digits += 1
    for d in range(digits - 1, -1, -1):
        out[n + d] = 48 + value % 10
        value //= 10
    return n + digits


@njit
def write_fens(pos: np.ndarray, out: np.ndarray, lengths: np.ndarray) -> None:
    """:func:`write_fen` for every row of ``pos`` (``out``: rows x ``FEN_BYTES``)."""
    for r in range(pos.shape[0]):
        lengths[r] = write_fen(pos[r], out[r])
