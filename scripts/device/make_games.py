"""Random legal games for the bulk-evaluation runs, without python-chess: PGN (SAN) or EPD.

    python3 scripts/device/make_games.py --games 14000 --pgn /tmp/games.pgn --epd /tmp/pos.epd

Moves are drawn uniformly from the search core's legal move list (``lc0py.chess.core.board``,
compiled), so this runs where python-chess is absent (the device image) and fast, in one
process per CPU. SAN is written here (piece letter, the least disambiguation, ``x``, ``=Q``,
``O-O``; no ``+``/``#``, which PGN readers do not need); the EPD has one FEN per position
(every ply of every game). Deterministic from ``--seed``.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys

import numpy as np

sys.path.insert(0, os.getcwd())

FILES = "abcdefgh"
LETTERS = " NBRQK"


def _square(s: int) -> str:
    return FILES[s % 8] + str(s // 8 + 1)


def _piece_at(pos: np.ndarray, sq: int) -> tuple[int, int]:
    """(colour, type) of the piece on ``sq``, (-1, -1) if empty."""
    bit = 1 << sq
    for colour in (0, 1):
        if int(pos[colour]) & bit:
            for t in range(6):
                if int(pos[2 + t]) & bit:
                    return colour, t
    return -1, -1


def san(pos: np.ndarray, move: int, legal: list[int]) -> str:
    frm, to, promo = move & 63, (move >> 6) & 63, move >> 12
    us = int(pos[10])
    colour, piece = _piece_at(pos, frm)
    target_colour, _ = _piece_at(pos, to)
    if piece == 5 and target_colour == us:
        return "O-O" if to % 8 > frm % 8 else "O-O-O"
    capture = target_colour == 1 - us
    if piece == 0:
        ep = int(pos[9])
        capture = capture or (to == ep and frm % 8 != to % 8)
        text = (FILES[frm % 8] + "x" if capture else "") + _square(to)
        return text + ("=" + LETTERS[promo] if promo else "")
    rivals = [
        m & 63 for m in legal if (m >> 6) & 63 == to and m & 63 != frm and _piece_at(pos, m & 63)[1] == piece
    ]
    hint = ""
    if rivals:
        if all(r % 8 != frm % 8 for r in rivals):
            hint = FILES[frm % 8]
        elif all(r // 8 != frm // 8 for r in rivals):
            hint = str(frm // 8 + 1)
        else:
            hint = _square(frm)
    return LETTERS[piece] + hint + ("x" if capture else "") + _square(to)


def fen(pos: np.ndarray) -> str:
    rows = []
    for rank in range(7, -1, -1):
        row, empty = "", 0
        for f in range(8):
            colour, t = _piece_at(pos, rank * 8 + f)
            if t < 0:
                empty += 1
                continue
            if empty:
                row, empty = row + str(empty), 0
            c = "pnbrqk"[t]
            row += c.upper() if colour == 0 else c
        rows.append(row + (str(empty) if empty else ""))
    castling = int(pos[8])
    rights = "".join(c for c, sq in (("K", 7), ("Q", 0), ("k", 63), ("q", 56)) if castling & (1 << sq)) or "-"
    ep = int(pos[9])
    ep_text = _square(ep) if ep != 64 else "-"
    stm = "b" if int(pos[10]) else "w"
    return f"{'/'.join(rows)} {stm} {rights} {ep_text} {int(pos[11])} {int(pos[12]) // 2 + 1}"


def games(args: tuple[int, int, int, bool, bool]) -> tuple[str, str, int]:
    first, count, seed, want_pgn, want_epd = args
    from lc0py.chess.core import board as B

    rng = np.random.default_rng(seed + first)
    out_pgn, out_epd, positions = [], [], 0
    buf = np.zeros(B.MAX_MOVES, np.uint16)
    for g in range(first, first + count):
        pos = _start()
        plies = int(rng.integers(40, 140))
        sans, fens = [], []
        for ply in range(plies + 1):
            if want_epd:
                fens.append(fen(pos))
            positions += 1
            n = B.gen_legal(pos, buf)
            if n == 0 or ply == plies or int(pos[11]) >= 100:
                break
            legal = [int(m) for m in buf[:n]]
            move = legal[int(rng.integers(0, n))]
            if want_pgn:
                sans.append(san(pos, move, legal))
            nxt = np.zeros_like(pos)
            B.play(pos, move, nxt)
            pos = nxt
        if want_pgn:
            body = " ".join((f"{k // 2 + 1}. " if k % 2 == 0 else "") + s for k, s in enumerate(sans))
            out_pgn.append(f'[Event "lc0py random {g}"]\n[Result "*"]\n\n{body} *\n\n')
        out_epd.extend(fens)
    return "".join(out_pgn), ("\n".join(out_epd) + "\n") if out_epd else "", positions


_START_POS: np.ndarray | None = None


def _start() -> np.ndarray:
    global _START_POS
    if _START_POS is None:
        from lc0py.chess.core import board as B

        pos = np.zeros(B.POS_WORDS, np.uint64)
        pos[0], pos[1] = 0xFFFF, 0xFFFF << 48
        pieces = [
            0xFF << 8 | 0xFF << 48,
            0x42 | 0x42 << 56,
            0x24 | 0x24 << 56,
            0x81 | 0x81 << 56,
            0x08 | 0x08 << 56,
            0x10 | 0x10 << 56,
        ]
        for t, m in enumerate(pieces):
            pos[2 + t] = m
        pos[8] = 1 | 1 << 7 | 1 << 56 | 1 << 63
        pos[9] = 64
        pos[B.W_KEY] = B.compute_key(pos)
        _START_POS = pos
    return _START_POS.copy()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--games", type=int, default=1000)
    p.add_argument("--pgn")
    p.add_argument("--epd")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--procs", type=int, default=os.cpu_count() or 2)
    a = p.parse_args()
    per = max(1, a.games // (a.procs * 4))
    jobs = [(k, min(per, a.games - k), a.seed, bool(a.pgn), bool(a.epd)) for k in range(0, a.games, per)]
    pgn = open(a.pgn, "w") if a.pgn else None
    epd = open(a.epd, "w") if a.epd else None
    total = 0
    with multiprocessing.get_context("spawn").Pool(a.procs) as pool:
        for text_pgn, text_epd, n in pool.imap(games, jobs):
            total += n
            if pgn:
                pgn.write(text_pgn)
            if epd:
                epd.write(text_epd)
    for f in (pgn, epd):
        if f:
            f.close()
    print(f"make_games: {a.games} games, {total} positions", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
