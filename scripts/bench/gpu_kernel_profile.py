#!/usr/bin/env python3
"""Where the GPU backend's time goes, kernel by kernel (needs torch on the device, not in lc0py).

Runs ``GpuNetwork.submit().result()`` on a net at one batch size under ``torch.profiler`` (CUPTI
sees every kernel of the process, also those lc0py launches through the driver API and cuBLAS)
and prints the device time per kernel name summed over the profiled batches, with its share.
Graphs are off so each kernel is its own launch.

    PYTHONPATH=$PWD python3 scripts/bench/gpu_kernel_profile.py --weights /tmp/res-20x256.pb.gz --batch 1024 \
        --backend-opts winograd=on
"""

from __future__ import annotations

import argparse
from collections import defaultdict

import numpy as np
import torch
from torch.profiler import ProfilerActivity, profile

from lc0py.backends.base import PlanesBatch
from lc0py.backends.registry import create_backend


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--weights", required=True)
    ap.add_argument("--backend", default="cuda-fp16")
    ap.add_argument("--backend-opts", default="")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    opts = ",".join(x for x in (args.backend_opts, f"graphs=off,max_batch={args.batch}") if x)
    backend = create_backend(args.backend, args.weights, opts)
    rng = np.random.default_rng(3)
    masks = rng.integers(0, 2**63, size=(args.batch, 112), dtype=np.uint64)
    batch = PlanesBatch(masks, rng.uniform(0.5, 1.5, (args.batch, 112)).astype(np.float32))
    for _ in range(3):
        backend.evaluate(batch)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(args.iters):
            backend.evaluate(batch)
    totals: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            name = event.name[:70]
            totals[name] += getattr(event, "device_time_total", 0.0)
            counts[name] += 1
    total = sum(totals.values())
    print(f"{args.weights} {args.backend} {opts}: batch {args.batch}, {args.iters} batches, "
          f"{total / args.iters / 1e3:.3f} ms of kernels per batch")
    for name, t in sorted(totals.items(), key=lambda kv: -kv[1])[: args.top]:
        calls = counts[name] // args.iters
        print(f"{t / args.iters / 1e3:9.3f} ms {100 * t / total:6.1f} %  x{calls:<4d} {name}")
    backend.close()


if __name__ == "__main__":
    main()
