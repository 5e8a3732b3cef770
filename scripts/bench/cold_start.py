#!/usr/bin/env python
"""A fresh install's first move: wall and CPU seconds of ``lc0py`` from its start to the first
``bestmove`` with an EMPTY compiled-code cache (``LC0PY_NUMBA_CACHE`` set to a new temporary
folder each run; the default net stays in lc0py's cache folder, generated once before timing).

The engine gets ``uci``, ``isready``, ``position startpos``, ``go nodes 100`` and, once
``bestmove`` is out, ``quit``. CPU seconds are user+sys of the engine and every process it
waited for (its compile helper included), read from ``RUSAGE_CHILDREN`` after it exits; on a
loaded machine they are the number to compare, the wall clock is inflated. Several trees (git
worktrees or clones) are run alternately, ``--runs`` rounds, each tree imported through
``PYTHONPATH``:

    python scripts/bench/cold_start.py --tree /work/main --tree . --runs 3

prints one line per run and the median per tree, plus ``uptime``.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMANDS = ["uci", "isready", "position startpos", "go nodes 100"]


def one_run(tree: Path, engine_args: list[str]) -> tuple[float, float, float]:
    """(seconds to uciok, seconds to bestmove, CPU seconds) of one cold engine from ``tree``."""
    cache = Path(tempfile.mkdtemp(prefix="lc0py-cold-"))
    env = dict(os.environ, PYTHONPATH=str(tree), LC0PY_NUMBA_CACHE=str(cache / "numba"))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "lc0py", *engine_args],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
        cwd=cache,  # not a tree: ``python -m`` puts the working folder before PYTHONPATH
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("\n".join(COMMANDS) + "\n")
    proc.stdin.flush()
    uciok = bestmove = float("nan")
    for line in proc.stdout:
        if line.startswith("uciok"):
            uciok = time.perf_counter() - start
        if line.startswith("bestmove"):
            bestmove = time.perf_counter() - start
            proc.stdin.write("quit\n")
            proc.stdin.flush()
            break
    proc.communicate(timeout=120)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    shutil.rmtree(cache, ignore_errors=True)
    return uciok, bestmove, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", type=Path, help="lc0py tree to import (repeat)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--engine-args", default="--weights <random>", help="default: %(default)s")
    args = parser.parse_args()
    trees = [t.resolve() for t in (args.tree or [Path.cwd()])]
    engine_args = args.engine_args.split()
    # the default net (and any other non-numba cache) made once, untimed
    subprocess.run(
        [sys.executable, "-m", "lc0py", *engine_args], input="uci\nisready\nquit\n", text=True,
        capture_output=True, env=dict(os.environ, PYTHONPATH=str(trees[0])), cwd=tempfile.gettempdir(),
        timeout=600,
    )
    results: dict[Path, list[tuple[float, float, float]]] = {t: [] for t in trees}
    for i in range(args.runs):
        for tree in trees:
            uciok, bestmove, cpu = one_run(tree, engine_args)
            results[tree].append((uciok, bestmove, cpu))
            print(f"run {i + 1} {tree}: uciok {uciok:.2f} s, bestmove {bestmove:.1f} s wall, {cpu:.1f} s CPU",
                  flush=True)
    for tree, rows in results.items():
        print(f"median {tree}: uciok {statistics.median(r[0] for r in rows):.2f} s, "
              f"bestmove {statistics.median(r[1] for r in rows):.1f} s wall, "
              f"{statistics.median(r[2] for r in rows):.1f} s CPU ({len(rows)} runs)")
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


if __name__ == "__main__":
    main()
