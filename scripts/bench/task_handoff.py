#!/usr/bin/env python
"""The task workers' hand-off latency: what a parallel round costs beyond its scans.

Times, on idle work, what ``SearchWorker._scan_round`` adds to a pick round: the futures of a
``ThreadPoolExecutor`` (submit to ``workers`` threads, the search thread's own share, wait for
all), each task a call of a compiled nogil function that returns at once. The result is a floor
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
    pool = ThreadPoolExecutor(args.workers)
    samples = []
    for _ in range(args.rounds):
        t0 = time.perf_counter_ns()
        futures = [pool.submit(_touch, a, k + 1) for k in range(args.workers)]
        _touch(a, 0)
        for f in futures:
            f.result()
        samples.append(time.perf_counter_ns() - t0)
    pool.shutdown()
    samples.sort()
    q = statistics.quantiles(samples, n=20)
    print(
        f"hand-off of {args.workers} tasks + the search thread's, {args.rounds} rounds: median "
        f"{statistics.median(samples) / 1e3:.1f} us, p5 {q[0] / 1e3:.1f} us, p95 {q[-1] / 1e3:.1f} us"
    )


if __name__ == "__main__":
    main()
