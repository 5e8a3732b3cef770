#!/usr/bin/env python
"""A fixed-node match between two lc0py configurations on the same net (e.g. ``cuda-fp8`` against
``cuda-fp16``, issue 28's match target).

Each opening is played twice, once with each side as white, so the openings cancel out: the 20
named lines of ``match_vs_lc0.py`` first, then seeded random openings (``--random-plies`` legal
plies each) until there are ``--games / 2`` distinct ones, so no game is a replay of another.
Games end by the rules (claimed draws included) or at the ply cap, adjudicated by material, as in
``match_vs_lc0.py``. ``--parallel K`` runs K pairs of engine processes, each playing its share of
the games (one GPU is shared). Printed: every game, then engine A's score, its standard error from
the per-game scores, and the 2 SE interval; ``--pgn`` writes the games.

    python scripts/compare/match_engines.py --weights NET --a cuda-fp8 --b cuda-fp16 \\
        --games 100 --nodes 400 --parallel 4 [--a-opts "fp8_scales=channel"] [--pgn FILE]

A measurement, not a test. Needs python-chess (the dev extra).
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import threading
import time
from pathlib import Path

import chess
import chess.engine
import chess.pgn

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))

from match_vs_lc0 import OPENINGS, play_game  # noqa: E402

from devtools.lc0_binary import lc0py_command, lc0py_env  # noqa: E402
from lc0py.chess.testing import random_moves  # noqa: E402


def openings(count: int, plies: int, seed: int) -> list[str]:
    """``count`` distinct openings: the named ones, then seeded random legal lines."""
    chosen = list(OPENINGS[:count])
    seen = set(chosen)
    rng = random.Random(seed)
    while len(chosen) < count:
        board = chess.Board()
        line = " ".join(random_moves(board, plies, rng))
        if board.outcome() is None and line not in seen:
            seen.add(line)
            chosen.append(line)
    return chosen


def engine(weights: str, backend: str, opts: str) -> chess.engine.SimpleEngine:
    extra = ["--backend-opts", opts] if opts else []
    return chess.engine.SimpleEngine.popen_uci(lc0py_command(weights, backend, *extra), env=lc0py_env())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--weights", required=True)
    ap.add_argument("--a", required=True, help="engine A's backend (the one scored)")
    ap.add_argument("--b", required=True, help="engine B's backend")
    ap.add_argument("--a-opts", default="", help="engine A's --backend-opts")
    ap.add_argument("--b-opts", default="", help="engine B's --backend-opts")
    ap.add_argument("--games", type=int, default=100, help="even: each opening twice")
    ap.add_argument("--nodes", type=int, default=400)
    ap.add_argument("--ply-cap", type=int, default=200)
    ap.add_argument("--adjudicate", type=int, default=3)
    ap.add_argument("--random-plies", type=int, default=6)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--parallel", type=int, default=1, help="pairs of engine processes")
    ap.add_argument("--pgn", default=None)
    args = ap.parse_args()
    if not Path(args.weights).is_file():
        print(f"match_engines: --weights {args.weights}: no such file", file=sys.stderr)
        return 2
    if args.games < 2 or args.games % 2:
        print("match_engines: --games must be even and at least 2", file=sys.stderr)
        return 2
    lines = openings(args.games // 2, args.random_plies, args.seed)
    games = [(i, lines[i // 2], i % 2 == 0) for i in range(args.games)]  # (index, opening, A white)
    results: dict[int, tuple[float, str, str, chess.Board]] = {}
    failures: list[str] = []
    lock = threading.Lock()
    t0 = time.perf_counter()
    label_a = f"{args.a}{'(' + args.a_opts + ')' if args.a_opts else ''}"
    label_b = f"{args.b}{'(' + args.b_opts + ')' if args.b_opts else ''}"

    def stream(share: list[tuple[int, str, bool]]) -> None:
        a = b = None
        try:
            a = engine(args.weights, args.a, args.a_opts)
            b = engine(args.weights, args.b, args.b_opts)
            for i, opening, a_white in share:
                engines = {chess.WHITE: a if a_white else b, chess.BLACK: b if a_white else a}
                result, how, board = play_game(engines, opening, args.nodes, args.ply_cap, args.adjudicate)
                white = {"1-0": 1.0, "0-1": 0.0}.get(result, 0.5)
                score = white if a_white else 1.0 - white
                with lock:
                    results[i] = (score, result, how, board)
                    print(f"game {i + 1:3d}  {'A-B' if a_white else 'B-A'}  {result:7s}  A {score:.1f}  "
                          f"plies {board.ply():3d}  {how}  [{opening}]  ({time.perf_counter() - t0:.0f} s)",
                          flush=True)
        except Exception as exc:  # noqa: BLE001 -- a failed stream is reported, the others go on
            with lock:
                failures.append(f"{type(exc).__name__}: {exc}")
        finally:
            for e in (a, b):
                if e is not None:
                    e.quit()

    k = max(1, min(args.parallel, len(games)))
    threads = [threading.Thread(target=stream, args=(games[j::k],)) for j in range(k)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for f in failures:
        print(f"match_engines: a stream failed: {f}", file=sys.stderr)
    scores = [results[i][0] for i in sorted(results)]
    if args.pgn:
        with open(args.pgn, "w") as out:
            for i in sorted(results):
                score, result, how, board = results[i]
                a_white = games[i][2]
                game = chess.pgn.Game.from_board(board)
                white, black = (label_a, label_b) if a_white else (label_b, label_a)
                game.headers.update(White=white, Black=black, Result=result,
                                    Event=f"match_engines nodes {args.nodes}", Round=str(i + 1))
                print(game, file=out, end="\n\n")
    n = len(scores)
    if n == 0:
        print("match_engines: no game finished", file=sys.stderr)
        return 1
    mean = statistics.fmean(scores)
    se = statistics.stdev(scores) / math.sqrt(n) if n > 1 else float("nan")
    elo = -400 * math.log10(1 / mean - 1) if 0 < mean < 1 else float("nan")
    w, d, lost = scores.count(1.0), scores.count(0.5), scores.count(0.0)
    print(f"A = {label_a} vs B = {label_b}, {n} games at {args.nodes} nodes/move: +{w} ={d} -{lost}, "
          f"A's score {mean:.3f} ± {se:.3f} (1 SE; {elo:+.0f} Elo); 2 SE interval {mean - 2 * se:.3f} … "
          f"{mean + 2 * se:.3f}; 50 % {'inside' if abs(mean - 0.5) <= 2 * se else 'outside'} it"
          f"{'' if not failures else f' ({len(failures)} stream(s) failed)'}")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
