"""The host-side evaluation benchmark of issue 27 on a CPU machine: ``lc0py eval`` and
``lc0py bulk-eval`` with ``--backend random`` over 20,000 FENs, wall clock with the process start.

    python scripts/bench/eval_20k.py --out DIR [--runs 3] [--tree OTHER_CHECKOUT ...]
        [--workers 0,1,2] [--pgn GAMES.pgn] [--skip-eval]

The input is bench/results/2026-11-27_cpu_055beeb's: ``random.Random(3)``, games of 1-80 random
legal python-chess moves, every position after a move, until 20,000 (``DIR/positions-20k.fen``).
``Net.evaluate_many`` of the same FEN strings is timed in CPU seconds too. Each ``--tree`` (a
checkout of lc0py, e.g. main) is timed in the same run as this one, turn about,
so a loaded machine loads both alike. Prints and writes ``DIR/eval-20k.txt``: per run the wall
clock, the evaluation's own positions/s (eval: from the first result line to the last, read off
its stdout; bulk-eval: its summary), the CPU seconds of the process and ``uptime``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

import chess

ROOT = Path(__file__).resolve().parents[2]


def make_positions(path: Path, count: int = 20_000, seed: int = 3) -> None:
    rng = random.Random(seed)
    fens: list[str] = []
    while len(fens) < count:
        board = chess.Board()
        for _ in range(rng.randint(1, 80)):
            moves = list(board.legal_moves)
            if not moves:
                break
            board.push(rng.choice(moves))
            fens.append(board.fen())
            if len(fens) == count:
                break
    path.write_text("\n".join(fens) + "\n")


def timed(cmd: list[str], tree: Path) -> tuple[float, float, float, list[bytes]]:
    """(wall s, CPU s of the child, s from the first stdout line to the end, stdout lines)."""
    env = {**os.environ, "PYTHONPATH": str(tree), "LC0PY_PROGRESS": "0"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    first = None
    lines = []
    for line in proc.stdout:
        if first is None:
            first = time.perf_counter()
        lines.append(line)
    proc.wait()
    end = time.perf_counter()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)}: exit {proc.returncode}")
    return end - start, cpu, end - (first or end), lines


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tree", action="append", type=Path, default=[], help="another checkout to time")
    parser.add_argument("--workers", default="", help="bulk-eval --workers values to time, e.g. 0,1,2")
    parser.add_argument("--pgn", type=Path, help="also time bulk-eval on this PGN (every ply)")
    parser.add_argument("--skip-eval", action="store_true", help="bulk-eval only")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    fens = args.out / "positions-20k.fen"
    if not fens.exists():
        make_positions(fens)
    weights = ROOT / "weights" / "tiny-seed1.pb.gz"
    report = []

    def say(text: str) -> None:
        print(text, flush=True)
        report.append(text)

    say(f"uptime: {os.popen('uptime').read().strip()}")
    trees = [ROOT, *[t.resolve() for t in args.tree]]
    for run in range(args.runs):
        for tree in trees:
            name = "this tree" if tree == ROOT else str(tree)
            if not args.skip_eval:  # the Python API on the same FEN strings, in one process
                code = ("import sys, time, lc0py; fens = open(sys.argv[1]).read().splitlines(); "
                        "net = lc0py.load(None, backend='random'); net.evaluate_many(fens[:300]); "
                        "t = time.process_time(); n = len(net.evaluate_many(fens)); "
                        "print(n, time.process_time() - t)")
                _, _, _, lines = timed([sys.executable, "-c", code, str(fens)], tree)
                count, cpu_api = lines[-1].decode().split()
                rate = int(count) / float(cpu_api)
                say(f"run {run + 1} {name}: Net.evaluate_many({count} FEN strings), random backend: "
                    f"{float(cpu_api):.2f} CPU s after the start ({rate:,.0f} per CPU s)")

                cmd = [sys.executable, "-m", "lc0py", "eval", "-w", str(weights), "--backend", "random",
                       "--positions", str(fens), "--json"]
                wall, cpu, body, lines = timed(cmd, tree)
                say(f"run {run + 1} {name}: eval --json: {len(lines)} lines, wall {wall:.2f} s "
                    f"({len(lines) / wall:,.0f} positions/s with the start), "
                    f"{len(lines) / body:,.0f} positions/s first line to last, CPU {cpu:.2f} s")
            for source in [fens, *([args.pgn] if args.pgn else [])]:
                for workers in [w for w in args.workers.split(",") if w] or [""]:
                    tag = f"{run}-{trees.index(tree)}-{source.suffix[1:]}-{workers or 'default'}"
                    out = args.out / f"bulk-{tag}"
                    subprocess.run(["rm", "-rf", str(out)], check=True)
                    cmd = [sys.executable, "-m", "lc0py", "bulk-eval", str(source), "-O", str(out), "-b",
                           "random", "--no-progress", "--json"] + (["--workers", workers] if workers else [])
                    wall, cpu, _, lines = timed(cmd, tree)
                    summary = json.loads(lines[-1])
                    say(f"run {run + 1} {name}: bulk-eval {source.name}"
                        f"{' --workers ' + workers if workers else ''}: {summary['positions']} positions, "
                        f"wall {wall:.2f} s, {summary['positions_per_second']:,.0f} positions/s (the job), "
                        f"CPU {cpu:.2f} s (with its workers)")
    say(f"uptime: {os.popen('uptime').read().strip()}")
    (args.out / "eval-20k.txt").write_text("\n".join(report) + "\n")


if __name__ == "__main__":
    main()
