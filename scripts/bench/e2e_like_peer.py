#!/usr/bin/env python3
"""A GPU backend's nodes per second timed as ``scripts/compare/peer_torch.py`` times the PyTorch peer.

A batch of random planes is built once; then per batch the H2D of its planes, the forward pass
(graphs) and the D2H of the outputs, median of 30 after 5 warm-up batches. This leaves out what
``lc0py backendbench`` also times (encoding a position and building the arrays every batch), so
it is the like-for-like figure against the peer. One JSON line per batch size on stdout.

    python3 scripts/bench/e2e_like_peer.py NET.pb.gz 64,256,1024 [backend options] [--backend cuda-fp16]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from lc0py.backends.base import PlanesBatch
from lc0py.backends.registry import create_backend


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("net")
    ap.add_argument("sizes", help="batch sizes, comma-separated")
    ap.add_argument("options", nargs="?", default="", help="backend options besides max_batch=1024")
    ap.add_argument("--backend", default="cuda-fp16")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    opts = ",".join(x for x in ("max_batch=1024", args.options) if x)
    backend = create_backend(args.backend, args.net, opts)
    rng = np.random.default_rng(5)
    for n in sizes:
        bits = rng.random((n, 112, 64)) < 0.12
        masks = (bits.astype(np.uint64) << np.arange(64, dtype=np.uint64)).sum(axis=2, dtype=np.uint64)
        batch = PlanesBatch(masks, rng.random((n, 112)).astype(np.float32))
        for _ in range(5):
            backend.evaluate(batch)
        times = []
        for _ in range(30):
            t = time.perf_counter()
            out = backend.evaluate(batch)
            float(out.policy[-1, -1])  # the D2H is complete once a value is read
            times.append(time.perf_counter() - t)
        med = float(np.median(times))
        print(json.dumps({"e2e": opts, "batch": n, "nps": n / med, "median_ms": med * 1e3}))
    backend.close()


if __name__ == "__main__":
    main()
