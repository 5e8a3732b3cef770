#!/usr/bin/env python
"""Search-only speed: lc0py's MCTS with the ``random`` backend (no network cost).

Runs one search per position (lc0's benchmark list, fresh tree, shared NN cache) to a node
limit and prints wall-clock and CPU-time nodes per second. CPU time (all threads of this
process) is the fairer figure on a shared machine; wall time is what a user sees.

    python scripts/bench/bench_search.py --nodes 20000 --positions 5 [--minibatch-size 256]
        [--profile] [--no-overlap] [--delay-ms 0] [--backend random] [--weights PATH] [--task-workers -1]
"""

from __future__ import annotations

import argparse
import gc
import time

from lc0py.backends.registry import create_backend
from lc0py.search.core.nncache import NNCache
from lc0py.search.core.tree import NodeTree
from lc0py.search.params import SearchParams
from lc0py.search.search import Search, SearchLimits
from lc0py.tools.benchmark import POSITIONS, split_position


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=20000)
    ap.add_argument("--positions", type=int, default=5)
    ap.add_argument("--minibatch-size", type=int, default=0)
    ap.add_argument("--backend", default="random")
    ap.add_argument("--weights", default=None)
    ap.add_argument("--delay-ms", type=float, default=0.0, help="random backend: simulated device time")
    ap.add_argument("--no-overlap", action="store_true")
    ap.add_argument("--task-workers", type=int, default=-1, help="lc0's TaskWorkers (-1: lc0's rule)")
    ap.add_argument("--profile", action="store_true", help="pyinstrument profile of the whole run")
    args = ap.parse_args()

    opts = f"delay_ms={args.delay_ms}" if args.backend == "random" and args.delay_ms else None
    backend = create_backend(args.backend, args.weights, opts)
    params = SearchParams(
        minibatch_size=args.minibatch_size, overlap=not args.no_overlap, task_workers=args.task_workers
    )
    cache = NNCache(200000)
    profiler = None
    if args.profile:
        from pyinstrument import Profiler

        profiler = Profiler(interval=0.001)
        profiler.start()
    wall = cpu = 0.0
    playouts = 0
    for text in POSITIONS[: args.positions]:
        fen, moves = split_position(text)
        tree = NodeTree()
        tree.reset_to_position(fen, moves)
        gc.collect()
        t0, c0 = time.perf_counter(), time.process_time()
        s = Search(tree, backend, params, SearchLimits(nodes=args.nodes, smart_pruning=False), cache)
        if profiler is not None:
            s._worker()  # in this thread, so the sampling profiler sees the search
        else:
            s.run()
            s.join()
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        wall += dt
        cpu += dc
        playouts += s.playouts
        print(
            f"{s.playouts:7d} playouts  {dt:6.2f} s  {s.playouts / dt:7.0f} nps wall  "
            f"{s.playouts / dc:7.0f} nps cpu  nn_evals {s.nn_evals}  {fen[:40]}"
        )
    print(
        f"total: {playouts} playouts, {playouts / wall:.0f} nps (wall), {playouts / cpu:.0f} nps (CPU time)"
    )
    if profiler is not None:
        profiler.stop()
        print(profiler.output_text(unicode=False, color=False))


if __name__ == "__main__":
    main()
