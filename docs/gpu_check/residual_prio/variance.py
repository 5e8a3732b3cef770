"""Where the per-process spread of res-20x256 at 1024 comes from (e2e 148-159k nps between runs of
one tree on one H100): several backends in one process, each after a pad allocation of a
different size (so its buffers lie elsewhere), each timed three ways -- e2e (as e2e.py), the
forward graph replayed alone (device events), and the outputs' D2H alone.
    python3 variance.py NET.pb.gz INSTANCES"""
import json
import sys
import time

import numpy as np
from cuda.bindings import driver as drv

from lc0py.backends.base import PlanesBatch
from lc0py.backends.registry import create_backend

net, count = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(5)
batches = {}
for n in (256, 1024):
    bits = rng.random((n, 112, 64)) < 0.12
    masks = (bits.astype(np.uint64) << np.arange(64, dtype=np.uint64)).sum(axis=2, dtype=np.uint64)
    batches[n] = PlanesBatch(masks, rng.random((n, 112)).astype(np.float32))
drv.cuInit(0)
_, dev = drv.cuDeviceGet(0)
_, ctx = drv.cuDevicePrimaryCtxRetain(dev)  # held here: the pads outlive each backend's close
drv.cuCtxSetCurrent(ctx)
pads = []
for i in range(count):
    backend = create_backend("cuda-fp16", net, "max_batch=1024")
    gpu = backend.gpu
    p, ops, runner = gpu.p, gpu.ops, gpu.runner
    row = {"instance": i}
    for n, batch in batches.items():
        for _ in range(5):
            backend.evaluate(batch)
        times = []
        for _ in range(25):
            t = time.perf_counter()
            out = backend.evaluate(batch)
            float(out.policy[-1, -1])
            times.append(time.perf_counter() - t)
        e2e = float(np.median(times))
        graph = next(g for (run, _flash), g in runner._graphs.items() if run == n)
        a, b = p.create_event(timing=True), p.create_event(timing=True)
        fwd = []
        for _ in range(10):
            p.event_record(a.handle, ops.main)
            for _ in range(5):
                p.launch_graph(graph, ops.main)
            p.event_record(b.handle, ops.main)
            p.synchronize(ops.main)
            fwd.append(p.event_elapsed_ms(a.handle, b.handle) / 5)
        row[f"e2e_ms_{n}"] = round(e2e * 1e3, 3)
        row[f"nps_{n}"] = round(n / e2e)
        row[f"graph_ms_{n}"] = round(float(np.median(fwd)), 3)
    print(json.dumps(row), flush=True)
    backend.close()
    drv.cuCtxSetCurrent(ctx)
    pads.append(drv.cuMemAlloc((i + 1) * 37 * 2**20 + (i + 1) * 3 * 2**16)[1])
