#!/usr/bin/env python
"""Where a search's time goes when it drives a backend: a per-batch timeline.

Wraps the worker's phases (gather, submit, wait for the result, backup) and the backend's
``evaluate_async``/``result`` with timestamps, runs one search per position to a node limit and
prints the medians per batch plus how much of the wall time the device had work in flight and how
much of the gathering happened while it did (the overlap the search is meant to get). Nothing in
lc0py is changed: the wrappers are installed by this script only.

    python scripts/bench/search_timeline.py --backend random --delay-ms 7 --minibatch-size 256
    python scripts/bench/search_timeline.py -w t82.pb.gz --backend cuda-fp16 -o max_batch=1024
        --minibatch-size 256  (one command)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from lc0py.backends.registry import create_backend  # noqa: E402
from lc0py.search import search as search_module  # noqa: E402
from lc0py.search import worker as worker_module  # noqa: E402
from lc0py.search.core.nncache import NNCache  # noqa: E402
from lc0py.search.core.tree import NodeTree  # noqa: E402
from lc0py.search.params import SearchParams  # noqa: E402
from lc0py.search.search import Search, SearchLimits  # noqa: E402
from lc0py.search.worker import prepare_for_search  # noqa: E402
from lc0py.tools.benchmark import POSITIONS, split_position  # noqa: E402

EVENTS: dict[str, list[tuple[float, float]]] = defaultdict(list)
SIZES: list[int] = []
_LOCK = threading.Lock()


def _record(name: str, t0: float, t1: float) -> None:
    with _LOCK:
        EVENTS[name].append((t0, t1))


def _timed(owner: Any, attr: str, name: str) -> None:
    original = getattr(owner, attr)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            _record(name, t0, time.perf_counter())

    setattr(owner, attr, wrapper)


class _TimedHandle:
    def __init__(self, inner: Any, submitted: float) -> None:
        self._inner, self._submitted = inner, submitted

    def result(self) -> Any:
        t0 = time.perf_counter()
        out = self._inner.result()
        t1 = time.perf_counter()
        _record("backend.result", t0, t1)
        _record("device.in_flight", self._submitted, t1)
        return out

    def done(self) -> bool:
        return bool(self._inner.done())


def _instrument(backend: Any) -> None:
    _timed(worker_module.SearchWorker, "gather", "gather")
    _timed(worker_module.SearchWorker, "complete", "complete (apply+backup)")
    _timed(worker_module.SearchWorker, "submit", "submit (search thread)")
    _timed(search_module.Search, "_complete_oldest", "complete_oldest (wait+complete)")
    _timed(search_module.Search, "_after_batch", "after_batch (stoppers, info)")
    original = backend.evaluate_async

    def evaluate_async(batch: Any) -> Any:
        t0 = time.perf_counter()
        handle = original(batch)
        t1 = time.perf_counter()
        _record("backend.evaluate_async", t0, t1)
        SIZES.append(len(batch))
        return _TimedHandle(handle, t0)

    backend.evaluate_async = evaluate_async


def _union(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[tuple[float, float]] = []
    for a, b in sorted(intervals):
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged


def _overlap(xs: list[tuple[float, float]], cover: list[tuple[float, float]]) -> float:
    total = 0.0
    for a, b in xs:
        for c, d in cover:
            lo, hi = max(a, c), min(b, d)
            if hi > lo:
                total += hi - lo
    return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-w", "--weights", default=None)
    ap.add_argument("-b", "--backend", default="random")
    ap.add_argument("-o", "--backend-opts", default=None)
    ap.add_argument("--delay-ms", type=float, default=0.0, help="random backend: simulated device time")
    ap.add_argument("--nodes", type=int, default=20000)
    ap.add_argument("--positions", type=int, default=3)
    ap.add_argument("--minibatch-size", type=int, default=256)
    ap.add_argument("--no-overlap", action="store_true")
    ap.add_argument("--threads", type=int, default=0, help="lc0's Threads: minibatches in flight (0: auto)")
    ap.add_argument("--skip", type=int, default=1, help="positions run first and not counted (warm-up)")
    args = ap.parse_args()

    opts = args.backend_opts
    if args.backend == "random" and args.delay_ms:
        opts = ",".join(x for x in (opts, f"delay_ms={args.delay_ms}") if x)
    backend = create_backend(args.backend, args.weights, opts)
    params = SearchParams(
        minibatch_size=args.minibatch_size, overlap=not args.no_overlap, threads=args.threads
    )
    cache = NNCache(200000)
    t0 = time.perf_counter()
    prepare_for_search(backend, params)  # graph captures, as the engine does at isready
    print(f"backend prepared in {time.perf_counter() - t0:.2f} s")
    _instrument(backend)
    texts = POSITIONS[: args.skip + args.positions]
    wall = 0.0
    playouts = 0
    start = None
    for i, text in enumerate(texts):
        if i == args.skip:
            EVENTS.clear()
            SIZES.clear()
        fen, moves = split_position(text)
        tree = NodeTree()
        tree.reset_to_position(fen, moves)
        t0 = time.perf_counter()
        if i == args.skip:
            start = t0
        s = Search(tree, backend, params, SearchLimits(nodes=args.nodes, smart_pruning=False), cache)
        s.run()
        s.join()
        dt = time.perf_counter() - t0
        tag = "warm-up " if i < args.skip else ""
        print(f"{tag}{s.playouts:7d} playouts {dt:6.2f} s {s.playouts / dt:7.0f} nps  batches {s.batches}")
        if i >= args.skip:
            wall += dt
            playouts += s.playouts
    end = time.perf_counter()
    assert start is not None
    span = end - start
    print(f"\ncounted: {playouts} playouts in {wall:.2f} s = {playouts / wall:.0f} nps")
    print(f"{'phase':36s} {'count':>6s} {'median ms':>10s} {'total s':>8s} {'share':>6s}")
    for name in sorted(EVENTS):
        d = [b - a for a, b in EVENTS[name]]
        print(f"{name:36s} {len(d):6d} {1e3 * statistics.median(d):10.3f} {sum(d):8.2f} {sum(d) / span:6.1%}")
    if SIZES:
        positions = sum(SIZES)
        print(f"network batches: {len(SIZES)}, mean size {positions / len(SIZES):.1f}, median "
              f"{statistics.median(SIZES):.0f}; {positions / wall:.0f} positions/s evaluated while searching")
    flight = _union(EVENTS.get("device.in_flight", []))
    busy = sum(b - a for a, b in flight)
    gathers = EVENTS.get("gather", [])
    g_total = sum(b - a for a, b in gathers)
    print(f"\nbackend has a batch in flight: {busy / span:.1%} of the wall time")
    if g_total:
        share = _overlap(gathers, flight) / g_total
        print(f"gathering while a batch is in flight: {share:.1%} of gather time")


if __name__ == "__main__":
    main()
