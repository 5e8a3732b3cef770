#!/usr/bin/env python
"""Where a search's time goes when it drives a backend: a per-batch timeline.

Wraps the worker's phases (gather, submit, wait for the result, backup) and the backend's
``evaluate_async``/``result`` with timestamps, runs one search per position to a node limit and
prints the medians per batch plus how much of the wall time the device had work in flight and how
much of the gathering happened while it did (the overlap the search is meant to get), then the
device's idle gaps during the searches and what the search thread was doing in them. Nothing in
lc0py is changed: the wrappers are installed by this script only.

    python scripts/bench/search_timeline.py --backend random --delay-ms 7 --minibatch-size 256
    python scripts/bench/search_timeline.py -w t82.pb.gz --backend cuda-fp16 -o max_batch=1024
        --minibatch-size 256  (one command)
    python scripts/bench/search_timeline.py -w t82.pb.gz --backend sim-gpu --delay-ms 0.3
        --delay-per-position-us 1  (one command)

``--backend sim-gpu`` (no GPU needed): the random backend's outputs computed on a device thread
after the delay, written as a GPU writes them (fp16 value logits and moves-left, float32 policy
rows in pooled host buffers) and handed to the search by the GPU runner's own result code
(``GpuRunner.read_outputs``), after a copy of the planes into host slots as ``_upload`` does:
the GPU backend's host path on a CPU. The report ends with the search thread's host time per
batch and per node (its phases minus its waits for the device).
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

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from lc0py.backends.registry import create_backend  # noqa: E402
from lc0py.search import search as search_module  # noqa: E402
from lc0py.search import worker as worker_module  # noqa: E402
from lc0py.search.core.nncache import NNCache  # noqa: E402
from lc0py.search.core.tree import NodeTree  # noqa: E402
from lc0py.search.params import SearchParams  # noqa: E402
from lc0py.search.search import Search, SearchLimits  # noqa: E402
from lc0py.search.warmup import warm_up  # noqa: E402
from lc0py.search.worker import prepare_for_search  # noqa: E402
from lc0py.tools.benchmark import POSITIONS, split_position  # noqa: E402
from scripts.bench.sim_gpu import SimulatedGpu  # noqa: E402

EVENTS: dict[str, list[tuple[float, float]]] = defaultdict(list)
SIZES: list[int] = []
PICKS: dict[str, int] = defaultdict(int)  # the gathers' picks by what extending them gave
CPU: list[float] = []  # search threads' CPU seconds
FEED_CPU: list[float] = []  # the feeders' threads' CPU seconds (lc0py/search/feeder.py)
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


def _count_picks() -> None:
    """Tally each gathered pick by kind (collision, terminal, NN-cache hit, network request)."""
    from lc0py.search.core import leaves

    names = {leaves.KIND_NONE: "collision/revisit", leaves.KIND_TERMINAL: "terminal",
             leaves.KIND_CACHE_HIT: "cache hit", leaves.KIND_NN: "network request"}
    original = worker_module.SearchWorker.gather

    def gather(self: Any, *args: Any, **kwargs: Any) -> Any:
        batch = original(self, *args, **kwargs)
        kinds, counts = np.unique(batch.kinds[: batch.count], return_counts=True)
        with _LOCK:
            PICKS["gathers"] += 1
            PICKS["prefetched requests"] += batch.nn_count - int(counts[kinds == leaves.KIND_NN].sum())
            for k, c in zip(kinds.tolist(), counts.tolist(), strict=True):
                PICKS[names.get(k, str(k))] += c
        return batch

    worker_module.SearchWorker.gather = gather  # type: ignore[method-assign]


def _instrument(backend: Any) -> None:
    _count_picks()
    _timed(worker_module.SearchWorker, "gather", "gather")
    _timed(worker_module.SearchWorker, "complete", "complete (apply+backup)")
    _timed(worker_module.SearchWorker, "submit", "submit (search thread)")
    _timed(search_module.Search, "_complete_oldest", "complete_oldest (wait+complete)")
    _timed(search_module.Search, "_after_batch", "after_batch (stoppers, info)")
    worker = search_module.Search._worker

    def counted_worker(self: Any) -> None:  # the search thread's own CPU time (no waits)
        c0 = time.thread_time()
        try:
            worker(self)
        finally:
            with _LOCK:
                CPU.append(time.thread_time() - c0)

    search_module.Search._worker = counted_worker  # type: ignore[method-assign]
    from lc0py.search import feeder as feeder_module

    def counted(run: Any) -> Any:
        def thread(self: Any) -> None:
            c0 = time.thread_time()
            try:
                run(self)
            finally:
                with _LOCK:
                    FEED_CPU.append(time.thread_time() - c0)

        return thread

    for name in ("_launch_all", "_resolve_all"):
        setattr(feeder_module.Feeder, name, counted(getattr(feeder_module.Feeder, name)))
    original = backend.evaluate_async

    def evaluate_async(batch: Any) -> Any:
        t0 = time.perf_counter()
        handle = original(batch)
        t1 = time.perf_counter()
        _record("backend.evaluate_async", t0, t1)
        SIZES.append(len(batch))
        return _TimedHandle(handle, t0)

    backend.evaluate_async = evaluate_async
    if getattr(backend, "gpu", None) is not None:  # the GPU backend: its wait, apart from reading
        from lc0py.backends.gpu import runner

        wait = runner.wait_without_gil

        def timed_wait(event: Any) -> None:
            t0 = time.perf_counter()
            wait(event)
            _record("device.wait", t0, time.perf_counter())

        runner.wait_without_gil = timed_wait


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


def sim_multi(kind: str, count: int, weights: str | None, opts: str | None, delay_ms: float,
              per_position_us: float) -> Any:
    """``demux`` / ``roundrobin`` over ``count`` simulated devices (the same random outputs)."""
    from lc0py.backends.multi.backends import DemuxBackend, RoundRobinBackend
    from lc0py.backends.multi.children import Child, ChildSpec
    from lc0py.backends.options import BackendOptions

    children = []
    for k in range(count):
        sim = SimulatedGpu(create_backend("random", weights, opts), delay_ms, per_position_us)
        sim.on_wait = lambda t0, t1: _record("device.wait", t0, t1)
        children.append(Child(ChildSpec(f"sim {k}", "sim-gpu", BackendOptions({}, "sim-gpu"), 1, 1024), sim))
    return DemuxBackend(children) if kind == "demux" else RoundRobinBackend(children)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-w", "--weights", default=None)
    ap.add_argument("-b", "--backend", default="random")
    ap.add_argument("-o", "--backend-opts", default=None)
    ap.add_argument("--delay-ms", type=float, default=0.0, help="random / sim-gpu: device ms a batch")
    ap.add_argument("--delay-per-position-us", type=float, default=0.0, help="+ us a position")
    ap.add_argument("--sim-children", type=int, default=0,
                    help="sim-gpu: this many simulated devices under --sim-kind (0: one, no multi backend)")
    ap.add_argument("--sim-kind", default="demux", choices=("demux", "roundrobin"))
    ap.add_argument("--child-feeding", default=None, choices=("auto", "resolve", "threads", "caller"),
                    help="multi backends: where each child's host work runs (backends.CHILD_FEEDING)")
    ap.add_argument("--max-outstanding", type=int, default=0,
                    help="network batches handed to the backend at once (0: the search's rule, "
                         "worker.network_batches_outstanding; 2: the rule before multi backends had theirs)")
    ap.add_argument("--nodes", type=int, default=20000)
    ap.add_argument("--positions", type=int, default=3)
    ap.add_argument("--minibatch-size", type=int, default=256, help="0: the backend's choice")
    ap.add_argument("--no-overlap", action="store_true")
    ap.add_argument("--threads", type=int, default=0, help="lc0's Threads: minibatches in flight (0: auto)")
    ap.add_argument("--no-feeder", action="store_true",
                    help="the search thread calls evaluate_async/result itself (no Feeder threads)")
    ap.add_argument("--skip", type=int, default=1, help="positions run first and not counted (warm-up)")
    args = ap.parse_args()

    worker_module.FEED_ASYNC_BACKENDS = not args.no_feeder
    if args.max_outstanding:
        search_module.network_batches_outstanding = lambda params, backend=None: args.max_outstanding
    if args.child_feeding is not None:
        from lc0py.backends.multi import backends as multi_backends

        multi_backends.CHILD_FEEDING = args.child_feeding
    opts = args.backend_opts
    if args.backend == "random" and (args.delay_ms or args.delay_per_position_us):
        delay = f"delay_ms={args.delay_ms},delay_per_position_us={args.delay_per_position_us}"
        opts = ",".join(x for x in (opts, delay) if x)
    backend: Any
    if args.backend == "sim-gpu" and args.sim_children:
        backend = sim_multi(args.sim_kind, args.sim_children, args.weights, opts, args.delay_ms,
                            args.delay_per_position_us)
    elif args.backend == "sim-gpu":
        inner = create_backend("random", args.weights, opts)
        backend = SimulatedGpu(inner, args.delay_ms, args.delay_per_position_us)
        backend.on_wait = lambda t0, t1: _record("device.wait", t0, t1)
    else:
        backend = create_backend(args.backend, args.weights, opts)
    params = SearchParams(
        minibatch_size=args.minibatch_size, overlap=not args.no_overlap, threads=args.threads
    )
    cache = NNCache(200000)
    t0 = time.perf_counter()
    print(f"search core loaded in {warm_up():.2f} s")  # (or compiled: a fresh machine)
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
            for sim in getattr(backend, "children", []):
                if isinstance(sim.backend, SimulatedGpu):
                    sim.backend.reset_clock()
            if isinstance(backend, SimulatedGpu):
                backend.reset_clock()
            EVENTS.clear()
            SIZES.clear()
            PICKS.clear()
            CPU.clear()
            FEED_CPU.clear()
        fen, moves = split_position(text)
        tree = NodeTree()
        tree.reset_to_position(fen, moves)
        t0 = time.perf_counter()
        if i == args.skip:
            start = t0
        s = Search(tree, backend, params, SearchLimits(nodes=args.nodes, smart_pruning=False), cache)
        s.run()
        s.join()
        t1 = time.perf_counter()
        dt = t1 - t0
        if i >= args.skip:
            _record("search", t0, t1)
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
    if PICKS:
        g = max(1, PICKS["gathers"])
        kinds = sorted((k, v) for k, v in PICKS.items() if k != "gathers")
        print("picks a gather: " + ", ".join(f"{k} {v / g:.1f}" for k, v in kinds))
    if SIZES:
        positions = sum(SIZES)
        print(f"network batches: {len(SIZES)}, mean size {positions / len(SIZES):.1f}, median "
              f"{statistics.median(SIZES):.0f}; {positions / wall:.0f} positions/s evaluated while searching")
        print("rows a GPU backend pads these batches to (CUDA graph buckets; one device): "
              f"graph_buckets=fine {_padding(SIZES, True):.1%}, coarse {_padding(SIZES, False):.1%}")
    host = sum(CPU)
    batches = len(EVENTS.get("complete (apply+backup)", [])) or 1
    print(f"search thread CPU time: {host:.2f} s = {1e6 * host / batches:.0f} us per minibatch "
          f"({batches}), {1e6 * host / max(1, playouts):.2f} us per node")
    feed = sum(FEED_CPU)
    print(f"feeder threads CPU time: {feed:.2f} s = {1e6 * feed / max(1, playouts):.2f} us per node "
          f"(search + feeder: {1e6 * (host + feed) / max(1, playouts):.2f} us per node)")
    flight = _union(EVENTS.get("device.in_flight", []))
    busy = sum(b - a for a, b in flight)
    gathers = EVENTS.get("gather", [])
    g_total = sum(b - a for a, b in gathers)
    print(f"\nbackend has a batch in flight: {busy / span:.1%} of the wall time")
    sims = [getattr(c, "backend", c) for c in getattr(backend, "children", [backend])]
    busy_devices = [s.busy_s / span for s in sims if isinstance(s, SimulatedGpu)]
    if busy_devices:
        print("simulated devices busy (since the first counted position): "
              + ", ".join(f"{b:.0%}" for b in busy_devices))
    if g_total:
        share = _overlap(gathers, flight) / g_total
        print(f"gathering while a batch is in flight: {share:.1%} of gather time")
    _report_idle(flight)


def _padding(sizes: list[int], fine: bool) -> float:
    """The share of the rows run that are padding when each batch runs in its graph bucket."""
    from lc0py.backends.gpu.weights import graph_bucket

    run = sum(graph_bucket(n, fine) for n in sizes)
    return (run - sum(sizes)) / run if run else 0.0


def _gaps(spans: list[tuple[float, float]], cover: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The parts of ``spans`` that no interval of ``cover`` (sorted, disjoint: ``_union``) covers."""
    out: list[tuple[float, float]] = []
    for a, b in spans:
        t = a
        for c, d in cover:
            if d <= t or c >= b:
                continue
            if c > t:
                out.append((t, c))
            t = max(t, d)
        if t < b:
            out.append((t, b))
    return out


def _report_idle(flight: list[tuple[float, float]]) -> None:
    """When no batch was in flight during a search: how long, in how many gaps, and what the search
    thread was doing meanwhile (a gap may overlap several phases, or none: Python between them).
    A gap ends when a batch is handed to the backend (``evaluate_async`` starts), so the feeder's
    hand-over counts as idle and the launch itself as in flight."""
    searches = EVENTS.get("search", [])
    if not searches or not flight:
        return
    gaps = _gaps(searches, flight)
    if not gaps:
        print("no batch in flight during the searches: never")
        return
    total = sum(b - a for a, b in gaps)
    span = sum(b - a for a, b in searches)
    lengths = sorted(1e3 * (b - a) for a, b in gaps)
    print(f"no batch in flight during the searches: {total:.3f} s ({total / span:.1%}) in {len(gaps)} gaps, "
          f"median {statistics.median(lengths):.3f} ms, largest {lengths[-1]:.3f} ms")
    starts = sum(b - a for a, b in gaps if any(a == s0 for s0, _ in searches))
    ends = sum(b - a for a, b in gaps if any(b == s1 for _, s1 in searches))
    print(f"  before each search's first batch: {starts:.3f} s; after its last: {ends:.3f} s")
    for name in ("gather", "complete (apply+backup)", "after_batch (stoppers, info)",
                 "submit (search thread)", "complete_oldest (wait+complete)"):
        spent = _overlap(gaps, _union(EVENTS.get(name, [])))
        if spent:
            print(f"  the search thread in {name}: {spent:.3f} s ({spent / total:.0%} of the idle time)")

if __name__ == "__main__":
    main()
