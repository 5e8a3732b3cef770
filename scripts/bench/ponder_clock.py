#!/usr/bin/env python
"""Clock use with pondering on and off, lc0py next to lc0's own binary (issue 12 item 3).

Each engine plays white for ``--moves`` moves against Stockfish (skill 0, ``--opponent-ms`` per
move) on a clock of ``--clock`` seconds plus ``--inc``, through python-chess exactly as a GUI or
lichess-bot does: with ``ponder=True`` python-chess sends ``go ponder`` after each ``bestmove``
and ``ponderhit`` (or ``stop`` + the real position) when the opponent has moved. The engine's
clock is charged the wall time from the command that starts its thinking (``go`` or
``ponderhit``) to its ``bestmove``, as a GUI charges it. Printed: clock left after the game and
the seconds used, per engine and ponder setting (median over ``--games``, off/on games
interleaved so that a change in the machine's load hits both), and the ratios.

    python scripts/bench/ponder_clock.py --weights weights/tiny-seed1.pb.gz --games 3

This is a measurement, not a test: the numbers depend on the machine's load.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

import chess
import chess.engine

ROOT = Path(__file__).resolve().parents[2]


def engine_command(name: str, weights: str) -> list[str]:
    if name == "lc0py":
        return [sys.executable, "-m", "lc0py", f"--weights={weights}", "--backend=numpy"]
    lc0 = shutil.which("lc0") or str(Path(sys.executable).parent / "lc0")
    return [lc0, f"--weights={weights}", "--backend=eigen"]


def play_game(
    cmd: list[str],
    sf_path: str,
    ponder: bool,
    moves: int,
    clock: float,
    inc: float,
    opponent_ms: int,
    minibatch: int,
) -> tuple[float, int, int]:
    """Clock left (s) for the engine (white) after ``moves`` moves, the moves played and how many
    of them were followed by a ponder search (a ``ponder`` move was given)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    engine = chess.engine.SimpleEngine.popen_uci(cmd, cwd=ROOT, env=env, timeout=120)
    sf = chess.engine.SimpleEngine.popen_uci(sf_path)
    try:
        sf.configure({"Skill Level": 0, "Threads": 1, "Hash": 16})
        engine.configure({"MoveOverheadMs": 100, "MinibatchSize": minibatch})
        board = chess.Board()
        left = clock
        played = pondered = 0
        while played < moves and not board.is_game_over(claim_draw=True):
            limit = chess.engine.Limit(white_clock=left, black_clock=clock, white_inc=inc, black_inc=inc)
            t0 = time.perf_counter()
            result = engine.play(board, limit, ponder=ponder)
            left = left - (time.perf_counter() - t0) + inc
            board.push(result.move)
            played += 1
            pondered += ponder and result.ponder is not None
            if board.is_game_over(claim_draw=True):
                break
            board.push(sf.play(board, chess.engine.Limit(time=opponent_ms / 1000)).move)
        return left, played, pondered
    finally:
        engine.quit()
        sf.quit()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--weights", default=str(ROOT / "weights" / "tiny-seed1.pb.gz"))
    ap.add_argument("--engines", default="lc0py,lc0")
    ap.add_argument("--games", type=int, default=3)
    ap.add_argument("--moves", type=int, default=20)
    ap.add_argument("--clock", type=float, default=10.0)
    ap.add_argument("--inc", type=float, default=0.1)
    ap.add_argument("--opponent-ms", type=int, default=200)
    ap.add_argument("--minibatch", type=int, default=32, help="MinibatchSize for both engines")
    args = ap.parse_args()
    sf_path = shutil.which("stockfish") or "/usr/games/stockfish"
    print(
        f"clock {args.clock} s + {args.inc} s, {args.moves} moves, opponent {args.opponent_ms} ms/move, "
        f"MinibatchSize {args.minibatch}; ponder off/on games interleaved"
    )
    print("engine  ponder  used_s(median)  pondered_moves  games(used_s)")
    results: dict[tuple[str, bool], list[tuple[float, int]]] = {}
    for _ in range(args.games):
        for name in args.engines.split(","):
            for ponder in (False, True):
                left, played, pondered = play_game(
                    engine_command(name, args.weights),
                    sf_path,
                    ponder,
                    args.moves,
                    args.clock,
                    args.inc,
                    args.opponent_ms,
                    args.minibatch,
                )
                results.setdefault((name, ponder), []).append(
                    (args.clock + played * args.inc - left, pondered)
                )
    for (name, ponder), runs in results.items():
        used = [u for u, _ in runs]
        print(
            f"{name:7} {'on' if ponder else 'off':6}  {statistics.median(used):14.2f}  "
            f"{statistics.median(p for _, p in runs):14}  " + " ".join(f"{u:.2f}" for u in used),
            flush=True,
        )
    for name in args.engines.split(","):
        off = statistics.median(u for u, _ in results[(name, False)])
        on = statistics.median(u for u, _ in results[(name, True)])
        print(f"{name}: ponder on / off = {on / off:.3f}")
    names = args.engines.split(",")
    if len(names) == 2:
        for ponder in (False, True):
            a = statistics.median(u for u, _ in results[(names[0], ponder)])
            b = statistics.median(u for u, _ in results[(names[1], ponder)])
            print(f"ponder {'on' if ponder else 'off'}: {names[0]} / {names[1]} = {a / b:.3f}")


if __name__ == "__main__":
    main()
