#!/usr/bin/env python3
"""Compare CPU backends on one net: median nodes/s per batch size, variants interleaved.

    python scripts/bench/onnx_cpu_bench.py --weights net.pb.gz --sizes 1,8,32 --reps 20 \\
        --variants numpy onnx-cpu:attention=plain onnx-cpu:attention=contrib

Each variant is ``backend[:backend-opts]``. Batches of positions from random legal playouts are
evaluated round-robin, one batch per variant per repetition, so load from other processes hits
every variant alike (a benchmark, not a test: it asserts nothing). Prints
a Markdown table (median nps, and min-max over the repetitions) and the load average before and
after, because on a shared machine that decides how far the figures can be trusted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from lc0py.backends.registry import create_backend
from lc0py.chess import encode_batch
from lc0py.chess.testing import random_games
from lc0py.weights import load_network


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--weights", required=True)
    parser.add_argument("--sizes", default="1,8,32")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--variants", nargs="+", default=["numpy", "onnx-cpu"])
    parser.add_argument(
        "--cpu-time",
        action="store_true",
        help="time with this process's CPU time instead of the wall clock: with threads=1 variants "
        "it shows the work each does, unaffected by other processes on a busy machine",
    )
    args = parser.parse_args()

    network = load_network(args.weights)
    backends = {}
    for variant in args.variants:
        name, _, opts = variant.partition(":")
        t0 = time.perf_counter()
        backends[variant] = create_backend(name, network, opts)
        print(f"# {variant}: created in {time.perf_counter() - t0:.2f} s")
    sizes = [int(s) for s in args.sizes.split(",")]
    fmt = network.format.input
    print(f"# load average before: {os.getloadavg()}; clock: {'CPU time' if args.cpu_time else 'wall'}")
    print("| batch | " + " | ".join(args.variants) + " |")
    print("|---:|" + "---:|" * len(args.variants))
    for size in sizes:
        batch = encode_batch([g.encode(fmt) for g in random_games(size, seed=size)])
        for backend in backends.values():  # warm-up (allocations, first-run paths)
            backend.evaluate(batch)
        times: dict[str, list[float]] = {v: [] for v in backends}
        clock = time.process_time if args.cpu_time else time.perf_counter
        for _ in range(args.reps):
            for variant, backend in backends.items():
                t0 = clock()
                backend.evaluate(batch)
                times[variant].append(max(clock() - t0, 1e-9))
        cells = []
        for variant in backends:
            nps = [size / t for t in times[variant]]
            cells.append(f"{statistics.median(nps):.1f} ({min(nps):.1f}-{max(nps):.1f})")
        print(f"| {size} | " + " | ".join(cells) + " |", flush=True)
    print(f"# load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
