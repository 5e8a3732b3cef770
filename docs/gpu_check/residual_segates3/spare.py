"""residual_h100b/e2e.py with se_gates on and the second convolution's GEMMs told to leave SPARE
multiprocessors to the side stream's gates (ops.se_gates_spare_sms; -1: se_gates off).
    python3 spare.py NET.pb.gz 256,1024 SPARE"""
import json, sys, time
import numpy as np
from lc0py.backends.base import PlanesBatch
from lc0py.backends.registry import create_backend

net, sizes, spare = sys.argv[1], [int(s) for s in sys.argv[2].split(",")], int(sys.argv[3])
backend = create_backend("cuda-fp16", net, f"max_batch=1024,se_gates={'off' if spare < 0 else 'on'}")
backend.gpu.ops.se_gates_spare_sms = max(spare, 0)
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
    print(json.dumps({"spare": spare, "batch": n, "nps": n / med, "median_ms": med * 1e3}))
backend.close()
