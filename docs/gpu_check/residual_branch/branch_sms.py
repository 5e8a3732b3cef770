"""The forward graph's device time of res-20x256 against the multiprocessors the second
convolution's GEMM leaves to the SE branch (ops.SE_BRANCH_SMS), with se_gates auto and on:
one backend per setting in one process, settings in a forward then a reverse round, each timed by
device events over 10 x 5 graph replays per batch size (median).
    python3 branch_sms.py NET.pb.gz 0,4,8,16"""
import json
import sys

import numpy as np

import lc0py.backends.gpu.ops as ops_mod
from lc0py.backends.base import PlanesBatch
from lc0py.backends.registry import create_backend

net, settings = sys.argv[1], [int(s) for s in sys.argv[2].split(",")]
sizes = (256, 512, 1024)
rng = np.random.default_rng(5)
batches = {}
for n in sizes:
    bits = rng.random((n, 112, 64)) < 0.12
    masks = (bits.astype(np.uint64) << np.arange(64, dtype=np.uint64)).sum(axis=2, dtype=np.uint64)
    batches[n] = PlanesBatch(masks, rng.random((n, 112)).astype(np.float32))
plan = [(s, g) for s in settings for g in ("auto", "on")]
for rnd, order in enumerate((plan, plan[::-1])):
    for sms, se_gates in order:
        ops_mod.SE_BRANCH_SMS = sms
        backend = create_backend("cuda-fp16", net, f"max_batch=1024,se_gates={se_gates}")
        gpu = backend.gpu
        p, main, runner = gpu.p, gpu.ops.main, gpu.runner
        row = {"round": rnd, "se_branch_sms": sms, "se_gates": se_gates}
        for n, batch in batches.items():
            out = backend.evaluate(batch)  # captures nothing new (prepare did), checks it runs
            assert np.isfinite(out.policy).all()
            graph = next(g for (run, _flash), g in runner._graphs.items() if run == n)
            a, b = p.create_event(timing=True), p.create_event(timing=True)
            fwd = []
            for _ in range(10):
                p.event_record(a.handle, main)
                for _ in range(5):
                    p.launch_graph(graph, main)
                p.event_record(b.handle, main)
                p.synchronize(main)
                fwd.append(p.event_elapsed_ms(a.handle, b.handle) / 5)
            row[f"graph_ms_{n}"] = round(float(np.median(fwd)), 4)
        print(json.dumps(row), flush=True)
        backend.close()
