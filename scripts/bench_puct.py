#!/usr/bin/env python
"""PUCT over one node's edges: numpy vectorised vs a plain Python loop (why the search loops).

For ``k`` children (all visited, the worst case for the loop) it times one selection both ways:
numpy on per-node arrays (``q + cs*P/(1+N+Nif)``, argmax) and the loop the search uses over
``Node`` objects. Prints microseconds per selection.

    python scripts/bench_puct.py [--children 30]
"""

# ruff: noqa: B023 - the closures are timed within the iteration that defines them
from __future__ import annotations

import argparse
import math
import random
import timeit

import numpy as np

from lc0py.search.node import Node


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--children", type=int, nargs="*", default=[5, 15, 30, 60])
    ap.add_argument("--repeat", type=int, default=20000)
    args = ap.parse_args()
    rng = random.Random(0)
    for k in args.children:
        priors = sorted((rng.random() for _ in range(k)), reverse=True)
        parent = Node()
        parent.expand(list(range(k)), priors)
        for i in range(k):
            c = parent.ensure_child(i)
            c.n, c.nif, c.wl = rng.randint(1, 50), rng.randint(0, 2), rng.uniform(-1, 1)
        P = np.array(priors)
        N = np.array([c.n for c in parent.children], dtype=np.float64)
        NIF = np.array([c.nif for c in parent.children], dtype=np.float64)
        Q = np.array([c.wl for c in parent.children])
        cs, fpu = 1.745 * math.sqrt(sum(N)), -0.3

        def with_numpy() -> int:
            q = np.where(N > 0, Q, fpu)
            return int(np.argmax(q + cs * P / (1.0 + N + NIF)))

        def with_loop() -> int:
            best, bi = -math.inf, 0
            i = 0
            for c, prior in zip(parent.children, parent.p, strict=True):
                if c is None:
                    break
                cn = c.n
                s = (c.wl if cn else fpu) + cs * prior / (1 + cn + c.nif)
                if s > best:
                    best, bi = s, i
                i += 1
            return bi

        assert with_numpy() == with_loop()
        t_np = min(timeit.repeat(with_numpy, number=args.repeat, repeat=3)) / args.repeat * 1e6
        t_loop = min(timeit.repeat(with_loop, number=args.repeat, repeat=3)) / args.repeat * 1e6
        print(f"{k:3d} children: numpy {t_np:5.2f} us, python loop {t_loop:5.2f} us")


if __name__ == "__main__":
    main()
