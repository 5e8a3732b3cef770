"""Soak the UCI engines against Stockfish under a real clock (issue 30's target): games at
``--tc`` (default 2 s + 0.1 s) through python-chess, each engine in turn (lc0py with numpy,
lc0py with onnx-cpu, lc0 0.32.1's binary with eigen), optionally under ``--hogs`` busy
processes, and a table per engine of what must stay zero or flat:

* illegal moves (python-chess refuses the ``bestmove``), hangs (no ``bestmove`` within the
  clock + ``--hang-s``), unsearched moves (no scored ``info`` or 0 nodes before the ``bestmove``),
  time losses (the engine's clock, charged from ``go`` to ``bestmove`` as a GUI does, below 0);
* the engine's thread count and RSS, sampled after every move (first / max / last).

A hung or dead engine is killed and restarted for the next game. Each side's clock is kept
here; Stockfish (``--stockfish``, 1 thread, ``--stockfish-skill``) plays the other side at the
same time control. Run from the repository root, e.g.:

    python scripts/soak_uci.py --games 100 --hogs 2 --weights /nets/t82.pb.gz
    python scripts/soak_uci.py --games 4 --engines lc0py-numpy,lc0 --json-out soak.json

It measures; it asserts nothing (the fuzzers and tests under tests/uci hold the rules).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import chess
import chess.engine

ROOT = Path(__file__).resolve().parents[1]
MAX_PLIES = 240  # a game still going after this many plies is adjudicated a draw


@dataclass
class EngineStats:
    name: str
    games: int = 0
    moves: int = 0
    illegal: int = 0
    hangs: int = 0
    unsearched: int = 0
    time_losses: int = 0
    crashes: int = 0
    wins: int = 0
    draws: int = 0
    losses: int = 0
    threads: list[int] = field(default_factory=list)
    rss_mb: list[float] = field(default_factory=list)
    think_s: list[float] = field(default_factory=list)


def engine_command(name: str, weights: str, lc0: str) -> list[str]:
    if name.startswith("lc0py-"):
        return [sys.executable, "-m", "lc0py", "-w", weights, "-b", name[len("lc0py-"):]]
    if name == "lc0":
        return [lc0, f"--weights={weights}", "--backend=eigen"]
    raise SystemExit(f"soak_uci: unknown engine {name!r} (lc0py-<backend> or lc0)")


def proc_sample(pid: int) -> tuple[int, float]:
    """(threads, RSS in MB) of a running process, from /proc (0s when it is gone)."""
    threads, rss = 0, 0.0
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Threads:"):
                threads = int(line.split()[1])
            elif line.startswith("VmRSS:"):
                rss = int(line.split()[1]) / 1024
    return threads, rss


def hog() -> None:
    while True:
        pass


def open_engine(command: list[str], timeout: float) -> chess.engine.SimpleEngine:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return chess.engine.SimpleEngine.popen_uci(command, timeout=timeout, env=env, stderr=subprocess.DEVNULL)


def play_game(stats: EngineStats, engine: chess.engine.SimpleEngine, stockfish: chess.engine.SimpleEngine,
              engine_white: bool, base_s: float, inc_s: float) -> bool:
    """One game; returns False when the engine must be restarted (hang or death)."""
    board = chess.Board()
    clocks = {chess.WHITE: base_s, chess.BLACK: base_s}
    game = object()
    ours = chess.WHITE if engine_white else chess.BLACK
    pid = engine.transport.get_pid()
    stats.games += 1
    alive = True
    result = None
    while not board.is_game_over(claim_draw=True) and board.ply() < MAX_PLIES:
        limit = chess.engine.Limit(white_clock=clocks[chess.WHITE], black_clock=clocks[chess.BLACK],
                                   white_inc=inc_s, black_inc=inc_s)
        player = engine if board.turn == ours else stockfish
        start = time.perf_counter()
        try:
            played = player.play(board, limit, game=game, info=chess.engine.INFO_SCORE)
        except chess.engine.EngineTerminatedError:
            if player is engine:
                stats.crashes += 1
                alive = False
            result = "loss" if player is engine else "win"
            break
        except (TimeoutError, chess.engine.EngineError) as exc:
            if player is engine:
                if isinstance(exc, TimeoutError):
                    stats.hangs += 1
                    alive = False
                else:
                    stats.illegal += 1
            result = "loss" if player is engine else "win"
            break
        used = time.perf_counter() - start
        clocks[board.turn] -= used
        if player is engine:
            stats.moves += 1
            stats.think_s.append(used)
            if not played.info.get("nodes") or "score" not in played.info:
                stats.unsearched += 1
            threads, rss = proc_sample(pid)
            stats.threads.append(threads)
            stats.rss_mb.append(rss)
        if clocks[board.turn] < 0:
            if player is engine:
                stats.time_losses += 1
            result = "loss" if player is engine else "win"
            break
        clocks[board.turn] += inc_s
        if played.move is None or played.move not in board.legal_moves:
            if player is engine:
                stats.illegal += 1
            result = "loss" if player is engine else "win"
            break
        board.push(played.move)
    if result is None:
        outcome = board.outcome(claim_draw=True)
        if outcome is None or outcome.winner is None:
            result = "draw"
        else:
            result = "win" if outcome.winner == ours else "loss"
    stats.wins += result == "win"
    stats.draws += result == "draw"
    stats.losses += result == "loss"
    return alive


def soak(name: str, args: argparse.Namespace) -> EngineStats:
    stats = EngineStats(name)
    base_s, inc_s = (float(x) for x in args.tc.split("+"))
    command = engine_command(name, args.weights, args.lc0)
    timeout = base_s + args.hang_s  # python-chess's per-command guard: a move past the whole clock
    stockfish = chess.engine.SimpleEngine.popen_uci(args.stockfish, timeout=timeout)
    stockfish.configure({"Threads": 1, "Hash": 16, "Skill Level": args.stockfish_skill})
    engine = open_engine(command, timeout)
    try:
        for g in range(args.games):
            alive = play_game(stats, engine, stockfish, g % 2 == 0, base_s, inc_s)
            if not alive:
                with contextlib.suppress(Exception):
                    engine.close()
                engine = open_engine(command, timeout)
            print(f"{name}: game {g + 1}/{args.games} done ({stats.moves} moves, {stats.hangs} hangs, "
                  f"{stats.time_losses} time losses)", file=sys.stderr)
    finally:
        with contextlib.suppress(Exception):
            engine.quit()
        with contextlib.suppress(Exception):
            stockfish.quit()
    return stats


def spread(values: list[float] | list[int]) -> str:
    if not values:
        return "-"
    return f"{values[0]:.0f} / {max(values):.0f} / {values[-1]:.0f}"


def table(all_stats: list[EngineStats], args: argparse.Namespace) -> str:
    head = ("engine", "games", "W/D/L", "moves", "illegal", "hangs", "unsearched", "time losses", "crashes",
            "threads first/max/last", "RSS MB first/max/last", "think s median")
    rows = [head]
    for s in all_stats:
        think = sorted(s.think_s)
        median = f"{think[len(think) // 2]:.2f}" if think else "-"
        rows.append((s.name, str(s.games), f"{s.wins}/{s.draws}/{s.losses}", str(s.moves), str(s.illegal),
                     str(s.hangs), str(s.unsearched), str(s.time_losses), str(s.crashes), spread(s.threads),
                     spread(s.rss_mb), median))
    lines = [f"soak: {args.games} games per engine at {args.tc} s against Stockfish (skill "
             f"{args.stockfish_skill}), {args.hogs} CPU hogs, weights {args.weights}",
             "| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=100, help="games per engine (colours alternate)")
    parser.add_argument("--tc", default="2+0.1", help="base+increment in seconds")
    parser.add_argument("--engines", default="lc0py-numpy,lc0py-onnx-cpu,lc0",
                        help="comma-separated: lc0py-<backend> and/or lc0")
    parser.add_argument("--weights", default=str(ROOT / "weights" / "tiny-seed1.pb.gz"))
    parser.add_argument("--lc0", default=shutil.which("lc0") or str(Path(sys.executable).parent / "lc0"))
    parser.add_argument("--stockfish", default=shutil.which("stockfish") or "/usr/games/stockfish")
    parser.add_argument("--stockfish-skill", type=int, default=0)
    parser.add_argument("--hogs", type=int, default=2, help="busy processes running meanwhile")
    parser.add_argument("--hang-s", type=float, default=20.0,
                        help="a move this long past the whole clock is a hang")
    parser.add_argument("--json-out", help="also write the numbers (and every sample) here")
    args = parser.parse_args()
    hogs = [multiprocessing.Process(target=hog, daemon=True) for _ in range(args.hogs)]
    for h in hogs:
        h.start()
    try:
        results = [soak(name.strip(), args) for name in args.engines.split(",") if name.strip()]
    finally:
        for h in hogs:
            h.terminate()
    print(table(results, args))
    if args.json_out:
        numbers = {"args": vars(args), "engines": [asdict(r) for r in results]}
        Path(args.json_out).write_text(json.dumps(numbers, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
