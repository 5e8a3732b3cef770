"""Evaluate one batch of random positions 10 times with graphs on (for Nsight Compute in context:
with --cache-control none each kernel sees the L2 its predecessor left).
    python3 ncu_ctx.py NET.pb.gz BATCH [backend options]"""
import sys
import numpy as np
from lc0py.backends.base import PlanesBatch
from lc0py.backends.registry import create_backend

net, n = sys.argv[1], int(sys.argv[2])
opts = ",".join(x for x in (f"max_batch={n}", sys.argv[3] if len(sys.argv) > 3 else "") if x)
backend = create_backend("cuda-fp16", net, opts)
rng = np.random.default_rng(5)
bits = rng.random((n, 112, 64)) < 0.12
masks = (bits.astype(np.uint64) << np.arange(64, dtype=np.uint64)).sum(axis=2, dtype=np.uint64)
batch = PlanesBatch(masks, rng.random((n, 112)).astype(np.float32))
for _ in range(10):
    float(backend.evaluate(batch).policy[-1, -1])
backend.close()
