#!/usr/bin/env python
"""The task workers' hand-off latency: what a parallel round costs beyond its scans.

Times, on idle work, what ``SearchWorker._scan_round`` adds to a pick round: hand ``workers``
threads a task each, do the search thread's own share, wait for all; each task a call of a
compiled nogil function that returns at once. Twice: through ``lc0py.search.taskpool.TaskPool``
(what the search uses) and through a ``ThreadPoolExecutor``'s futures (for comparison). The result is a floor
for the overhead of one parallel round; a round pays off when its serial extension (~2 us a leaf
on this machine's cores, ``scripts/bench/gather_split.py``) saved across the tasks exceeds it.

    PYTHONPATH=$PWD python scripts/bench/task_handoff.py [--workers 4] [--rounds 20000]
"""

from __future__ import annotations

import argparse
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from lc0py.search.core.jit import njit
from lc0py.search.taskpool import TaskPool


@njit
def _touch(a: np.ndarray, k: int) -> None:
    a[k] += 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=20000)
    args = ap.parse_args()
    a = np.zeros(args.workers + 1, np.int64)
    _touch(a, 0)
    jobs = [lambda k=k: _touch(a, k + 1) for k in range(args.workers)]

    def via_task_pool() -> list[int]:
        pool = TaskPool(args.workers)
        samples = []
        for _ in range(args.rounds):
            t0 = time.perf_counter_ns()
            for k in range(args.workers):
                pool.start(k, jobs[k])
            _touch(a, 0)
            for k in range(args.workers):
                pool.wait(k)
            samples.append(time.perf_counter_ns() - t0)
        pool.close()
        return samples

    def via_executor() -> list[int]:
        pool = ThreadPoolExecutor(args.workers)
        samples = []
        for _ in range(args.rounds):
            t0 = time.perf_counter_ns()
            futures = [pool.submit(jobs[k]) for k in range(args.workers)]
            _touch(a, 0)
            for f in futures:
                f.result()
            samples.append(time.perf_counter_ns() - t0)
        pool.shutdown()
        return samples

    for name, way in (("TaskPool", via_task_pool), ("ThreadPoolExecutor", via_executor)):
        samples = sorted(way())
        q = statistics.quantiles(samples, n=20)
        print(
            f"{name}: hand-off of {args.workers} tasks + the search thread's, {args.rounds} rounds: median "
            f"{statistics.median(samples) / 1e3:.1f} us, p5 {q[0] / 1e3:.1f} us, p95 {q[-1] / 1e3:.1f} us"
        )

if __name__ == "__main__":
    main()
