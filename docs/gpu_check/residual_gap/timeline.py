"""Where an end-to-end batch's time goes (issue 11): e2e.py's loop (a batch of random positions
built once; per batch the upload, forward graph and D2H, median of 30) with CUDA events between its
stages and host clocks around them.
    python3 timeline.py NET.pb.gz 256,1024 [prefilled]
GPU spans: memcpy (host copies the planes into the pinned slot: the GPU is idle), h2d, graph, d2h;
host: iteration minus the GPU span = time the GPU waits on the host after the batch.
`prefilled` skips the host copy into the pinned slot (the peer's inputs are pinned already)."""
import json, sys, time
import numpy as np
from lc0py.backends.base import PlanesBatch
from lc0py.backends.gpu.runner import PLANES
from lc0py.backends.registry import create_backend

net, sizes = sys.argv[1], [int(s) for s in sys.argv[2].split(",")]
prefilled = len(sys.argv) > 3 and sys.argv[3] == "prefilled"
backend = create_backend("cuda-fp16", net, "max_batch=1024")
run = backend.gpu.runner
p, main = run.p, run.ops.main
E = [p.create_event(timing=True) for _ in range(5)]
T: dict[str, float] = {}
orig_finish, orig_launch = run._finish, p.launch_graph


def upload(slot, batch, rows):
    T["u0"] = time.perf_counter()
    E[0].record(main)
    n = len(batch)
    if not prefilled or not T.get("filled"):
        masks = slot.masks.view(np.uint64, (rows, PLANES))
        values = slot.values.view(np.float32, (rows, PLANES))
        masks[:n] = batch.masks
        values[:n] = batch.values
    T["u1"] = time.perf_counter()
    E[1].record(main)
    p.copy_h2d(run.buf.in_masks, slot.masks, rows * PLANES * 8, main)
    p.copy_h2d(run.buf.in_values, slot.values, rows * PLANES * 4, main)
    E[2].record(main)


def launch(graph, stream):
    orig_launch(graph, stream)
    E[3].record(main)
    T["l1"] = time.perf_counter()


def finish(slot, n):
    pend = orig_finish(slot, n)
    E[4].record(main)
    T["f1"] = time.perf_counter()
    return pend


run._upload, p.launch_graph, run._finish = upload, launch, finish
rng = np.random.default_rng(5)
for n in sizes:
    bits = rng.random((n, 112, 64)) < 0.12
    masks = (bits.astype(np.uint64) << np.arange(64, dtype=np.uint64)).sum(axis=2, dtype=np.uint64)
    batch = PlanesBatch(masks, rng.random((n, 112)).astype(np.float32))
    rows = []
    for i in range(36):
        T.clear()
        t0 = time.perf_counter()
        out = backend.evaluate(batch)
        float(out.policy[-1, -1])
        t1 = time.perf_counter()
        if i >= 6:
            g = [E[j].elapsed_ms(E[j + 1]) for j in range(4)]
            rows.append([(t1 - t0) * 1e3, *g, E[0].elapsed_ms(E[4]), (T["u0"] - t0) * 1e3,
                         (T["u1"] - T["u0"]) * 1e3, (T["l1"] - T["u1"]) * 1e3, (T["f1"] - T["l1"]) * 1e3,
                         (t1 - T["f1"]) * 1e3])
    med = np.median(np.array(rows), axis=0)
    keys = ["iter", "gpu_memcpy", "gpu_h2d", "gpu_graph", "gpu_d2h", "gpu_span", "host_pre", "host_copy",
            "host_h2d_launch", "host_d2h_enq", "host_wait_read"]
    print(json.dumps({"batch": n, "prefilled": prefilled, **{k: round(float(v), 4) for k, v in zip(keys, med)}}))
backend.close()
