#!/usr/bin/env python
"""The compiled gather's own cost per gathered node, as the search runs it.

``gather_split.py`` replays the gather's loop from Python to split it, so each part also pays a
Python call (~3.5 µs of argument unboxing a call, a lot beside rounds of a few leaves). This
script times the worker's real ``gather.gather_minibatch`` calls instead (thread CPU time and
wall time around each call; one call per gather, as in a search) and divides by the visits the
gathers produced (playouts + out-of-order visits counted by the core). Use a real net
(``--backend numpy -w NET``) for trees shaped like a real search's; ``random`` gives flat ones.

    PYTHONPATH=$PWD python scripts/bench/gather_cost.py --nodes 6000 --positions 3
        [--backend numpy -w maia-1900.pb.gz] [--minibatch-size 0]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from lc0py.backends.registry import create_backend
from lc0py.search import worker as W
from lc0py.search.core import gather as G
from lc0py.search.core.nncache import NNCache
from lc0py.search.core.tree import NodeTree
from lc0py.search.fastcall import Resolved
from lc0py.search.params import SearchParams
from lc0py.search.search import Search, SearchLimits
from lc0py.tools.benchmark import POSITIONS, split_position


class TimedGather:
    """The compiled gather, timed call by call."""

    def __init__(self) -> None:
        self.real = Resolved(G.gather_minibatch)
        self.cpu_ns = 0
        self.wall_ns = 0
        self.calls = 0

    def __call__(self, *args: Any) -> Any:
        c0 = time.thread_time_ns()
        w0 = time.perf_counter_ns()
        status = self.real(*args)
        self.wall_ns += time.perf_counter_ns() - w0
        self.cpu_ns += time.thread_time_ns() - c0
        self.calls += 1
        return status

    def reset(self) -> None:
        self.cpu_ns = self.wall_ns = self.calls = 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=6000)
    ap.add_argument("--positions", type=int, default=3)
    ap.add_argument("--minibatch-size", type=int, default=0)
    ap.add_argument("--backend", default="random")
    ap.add_argument("--weights", "-w", default=None)
    args = ap.parse_args()
    backend = create_backend(args.backend, args.weights, None)
    params = SearchParams(minibatch_size=args.minibatch_size, overlap=False)
    cache = NNCache(200000)
    timed = TimedGather()
    original = Resolved

    def resolved(dispatcher: Any) -> Any:
        return timed if dispatcher is G.gather_minibatch else original(dispatcher)

    W.Resolved = resolved  # type: ignore[misc,assignment]
    nodes = 0
    for k, text in enumerate(POSITIONS[: args.positions]):
        fen, moves = split_position(text)
        tree = NodeTree()
        tree.reset_to_position(fen, moves)
        s = Search(tree, backend, params, SearchLimits(nodes=args.nodes, smart_pruning=False), cache)
        s.run()
        s.join()
        if k == 0:  # the first search loads the compiled core: count from the second on
            timed.reset()
            continue
        nodes += tree.num_nodes
    print(
        f"positions {args.positions - 1} timed, {timed.calls} gather calls, {nodes} nodes; gather "
        f"thread CPU {timed.cpu_ns / 1e6:.1f} ms ({timed.cpu_ns / 1e3 / max(1, nodes):.3f} us/node), wall "
        f"{timed.wall_ns / 1e6:.1f} ms ({timed.wall_ns / 1e3 / max(1, nodes):.3f} us/node)"
    )


if __name__ == "__main__":
    main()
