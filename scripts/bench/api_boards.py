#!/usr/bin/env python3
"""``Net.evaluate_many`` on python-chess boards deep in games: positions per second.

Boards are every position of seeded random games (``--games`` games of up to ``--plies`` plies);
the ``random`` backend (no network work) by default, so the figure is the host path: each board's
history, the encoding, the policy over the legal moves and the ``Evaluation`` objects. The same
positions as FEN strings (no history) are timed too, for comparison.

    PYTHONPATH=$PWD python3 scripts/bench/api_boards.py --games 8 --plies 160
"""

from __future__ import annotations

import argparse
import random
import sys
import time

import chess

import lc0py
from lc0py.errors import Lc0pyError


def boards(games: int, plies: int, seed: int) -> list[chess.Board]:
    rng = random.Random(seed)
    out: list[chess.Board] = []
    for _ in range(games):
        board = chess.Board()
        for _ in range(plies):
            legal = list(board.legal_moves)
            if not legal or board.is_game_over():
                break
            board.push(rng.choice(legal))
            out.append(board.copy())
    return out


def rate(net: lc0py.Net, positions: list, repeats: int) -> float:
    net.evaluate_many(positions[:8])
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        net.evaluate_many(positions)
        best = min(best, time.perf_counter() - start)
    return len(positions) / best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", type=int, default=8)
    ap.add_argument("--plies", type=int, default=160)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--backend", default="random")
    ap.add_argument("--weights", default=None)
    args = ap.parse_args()
    positions = boards(args.games, args.plies, args.seed)
    mean = sum(len(b.move_stack) for b in positions) / len(positions)
    try:
        net = lc0py.load(args.weights, backend=args.backend)
    except Lc0pyError as exc:  # a bad net or backend: one line, as the CLI says it
        print(f"api_boards: {exc}", file=sys.stderr)
        sys.exit(2)
    with net:
        on_boards = rate(net, positions, args.repeats)
        on_fens = rate(net, [b.fen() for b in positions], args.repeats)
    print(f"{len(positions)} boards, mean {mean:.0f} plies into their games, backend {args.backend}: "
          f"boards {on_boards:,.0f} positions/s, their FENs {on_fens:,.0f} positions/s")


if __name__ == "__main__":
    main()
