#!/usr/bin/env python
"""Resident memory of lc0py's UCI engine over many consecutive searches in one session (issue 10).

Starts ``lc0py uci`` once and sends ``--searches`` times ``position …`` + ``go nodes N``,
playing each search's best move so that the game goes on and the tree is reused (a new game,
with ``ucinewgame``, when one ends or reaches ``--max-plies``). After each search it reads the
engine's resident set (VmRSS in /proc/<pid>/status) and prints it after the searches listed in
``--report`` (and the last), plus the growth from the first reported search to the last.
The NN
cache's arrays are allocated zeroed for ``NNCacheSize`` entries at once (about 100 bytes an entry)
but the kernel commits their pages only as entries are written, so the resident set grows with
the entries written until the cache is full (lc0's cache grows the same way); after that, and with a
small ``--option NNCacheSize=…`` from the start, the figure should stay flat.

    python scripts/bench/rss_flat.py --searches 100 --nodes 10000 [--backend random] [--weights PATH]

Linux only (/proc). This is a measurement, not a test.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import chess

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # devtools/ lives in the checkout, not in the wheel

from devtools.lc0_binary import UciSession, lc0py_command, lc0py_env  # noqa: E402


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise OSError(f"no VmRSS for process {pid}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--searches", type=int, default=100)
    ap.add_argument("--nodes", type=int, default=10000)
    ap.add_argument("--backend", default="random")
    ap.add_argument("--weights", default=str(ROOT / "weights" / "tiny-seed1.pb.gz"))
    ap.add_argument("--max-plies", type=int, default=80, help="start a new game after this many plies")
    ap.add_argument("--report", type=int, nargs="+", default=[1, 10, 50, 100])
    ap.add_argument("--option", action="append", default=[], metavar="NAME=VALUE", help="setoption for lc0py")
    args = ap.parse_args()
    weights = None if args.backend == "random" else args.weights
    command = lc0py_command(weights, args.backend)
    series: list[tuple[int, float]] = []
    with UciSession(command, env=lc0py_env()) as engine:
        engine.run(["uci"], until=lambda s: s == "uciok")
        for item in args.option:
            name, value = item.split("=", 1)
            engine.send(f"setoption name {name} value {value}")
        engine.run(["isready"], until=lambda s: s == "readyok", timeout=600)
        pid = engine.proc.pid
        print(f"after isready: RSS {rss_mb(pid):.1f} MB", flush=True)
        board = chess.Board()
        engine.send("ucinewgame")
        for i in range(1, args.searches + 1):
            if board.is_game_over(claim_draw=True) or board.ply() >= args.max_plies:
                board = chess.Board()
                engine.send("ucinewgame")
            moves = " ".join(m.uci() for m in board.move_stack)
            engine.send("position startpos" + (f" moves {moves}" if moves else ""))
            lines = engine.run([f"go nodes {args.nodes}"], until=lambda s: s.startswith("bestmove"),
                               timeout=600)
            best = lines[-1].split()[1]
            board.push_uci(best)
            mb = rss_mb(pid)
            if i in args.report or i == args.searches:
                series.append((i, mb))
                print(f"after search {i:4d} (ply {board.ply():3d}): RSS {mb:.1f} MB", flush=True)
        engine.send("quit")
    first, last = series[0][1], series[-1][1]
    print("RSS series (search, MB): " + ", ".join(f"{i}: {mb:.1f}" for i, mb in series))
    print(f"growth from search {series[0][0]} to {series[-1][0]}: {last - first:+.1f} MB; "
          f"from search {series[1][0] if len(series) > 1 else series[0][0]}: "
          f"{last - (series[1][1] if len(series) > 1 else first):+.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
