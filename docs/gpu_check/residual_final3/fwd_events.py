"""Device time of the forward pass alone with graphs on: CUDA events recorded on the main stream
around the graph launch (no H2D/D2H), median of 30 per batch size."""
import json, sys
import numpy as np
from lc0py.backends.base import PlanesBatch
from lc0py.backends.registry import create_backend

backend = create_backend("cuda-fp16", sys.argv[1], "max_batch=1024")
gpu = backend.gpu
runner = gpu.runner if hasattr(gpu, "runner") else gpu._runner
p, main = runner.p, runner.ops.main
start, end = p.create_event(timing=True), p.create_event(timing=True)
rng = np.random.default_rng(9)
for n in [int(s) for s in sys.argv[2].split(",")]:
    batch = PlanesBatch(rng.integers(1, 2**63, size=(n, 112), dtype=np.uint64), rng.random((n, 112)).astype(np.float32))
    for _ in range(3):
        backend.evaluate(batch)
    from lc0py.backends.gpu.weights import graph_bucket
    graph = runner._graph(graph_bucket(n), gpu.uses_flash if hasattr(gpu, "uses_flash") else False)
    ms = []
    for _ in range(30):
        start.record(main); p.launch_graph(graph, main); end.record(main); end.synchronize()
        ms.append(start.elapsed_ms(end))
    print(json.dumps({"forward_graph_ms": float(np.median(ms)), "batch": n}))
backend.close()
