"""Timed as scripts/peer_torch.py times the PyTorch peer: a batch built once, then per batch the
H2D of its planes, the forward pass (graphs) and the D2H of the outputs, median of 30. This leaves
out what backendbench also times (encoding a position and building the arrays every batch), so it
is the like-for-like figure against the peer.
    python3 e2e.py NET.pb.gz 64,256,1024 [backend options]"""
import json, sys, time
import numpy as np
from lc0py.backends.base import PlanesBatch
from lc0py.backends.registry import create_backend

net, sizes = sys.argv[1], [int(s) for s in sys.argv[2].split(",")]
opts = ",".join(x for x in ("max_batch=1024", sys.argv[3] if len(sys.argv) > 3 else "") if x)
backend = create_backend("cuda-fp16", net, opts)
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
        float(out.policy[-1, -1])
        times.append(time.perf_counter() - t)
    med = float(np.median(times))
    print(json.dumps({"e2e": opts, "batch": n, "nps": n / med, "median_ms": med * 1e3}))
backend.close()
