#!/usr/bin/env python3
"""Residual (SE-ResNet) nets on the GPU backend, one device call: accuracy then throughput.

1. For res-tiny (convolution, relu/no-SE/tanh, classical, attention policy), res-20x256 and t78
   (2 blocks each), fp16 and fp32, im2col and Winograd convolutions: ``GpuNetwork`` (traced eager
   path and the graph path) vs the numpy float64 reference on 9 random positions -- relative
   errors of policy, WDL, moves-left.
2. res-20x256 and t78 at full depth, fp16 with graphs, im2col and Winograd: median wall time of
   ``submit().result()`` (H2D + forward + D2H) at batch 64/256/1024, nodes per second, effective
   TFLOP/s (direct-convolution FLOP count, ``ResidualNetwork.flops_per_position``).

    PYTHONPATH=$PWD python3 scripts/bench/gpu_residual_smoke.py
"""

from __future__ import annotations

import time

import numpy as np

from lc0py.backends.base import PlanesBatch
from lc0py.backends.gpu.network import GpuNetwork
from lc0py.backends.gpu.options import GpuOptions
from lc0py.gpu.cuda_platform import CudaPlatform
from lc0py.model import cast_network, forward
from lc0py.weights.presets import random_network as R

p = CudaPlatform(0)
rng = np.random.default_rng(1)


def rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(np.asarray(a, float) - b) / np.linalg.norm(b))


def batch(n: int) -> PlanesBatch:
    m = rng.integers(0, 2**63, size=(n, 112), dtype=np.uint64)
    m &= rng.integers(0, 2**63, size=(n, 112), dtype=np.uint64)
    return PlanesBatch(m, rng.uniform(0.5, 1.5, (n, 112)).astype(np.float32))


nets = [
    ("conv", R("res-tiny", 7)),
    ("relu-noSE-tanh", R("res-tiny", 7, default_activation="relu", se=False, wdl=False)),
    ("classical", R("res-tiny", 7, policy="classical", policy_channels=32, moves_left=False)),
    ("attn", R("res-tiny", 7, policy="attention", policy_embedding=32, policy_dmodel=32)),
    ("20x256", R("res-20x256", 7, blocks=2)),
    ("t78", R("t78", 7, blocks=2)),
]
for name, net in nets:
    for fp16, wino in ((True, False), (False, False), (True, True), (False, True)):
        g = GpuNetwork(p, net, fp16=fp16, options=GpuOptions(max_batch=16, winograd=wino))
        b = batch(9)
        ref = forward(cast_network(net, np.float64), b.dense(np.float64), np.float64)
        o, _ = g.evaluate_traced(b, flash=False)
        o2 = g.submit(b).result()
        ml = rel(o.moves_left, ref.moves_left) if net.moves_left else 0.0
        errs = (rel(o.policy, ref.policy), rel(o.wdl, ref.wdl), ml, rel(o2.policy, ref.policy))
        line = "pol {:.2e} wdl {:.2e} mlh {:.2e} graph-pol {:.2e}".format(*errs)
        print(name, "fp16" if fp16 else "fp32", "winograd" if wino else "im2col", line, flush=True)
        g.close()
for preset, wino in (("res-20x256", False), ("res-20x256", True), ("t78", False), ("t78", True)):
    net = R(preset, 3)
    g = GpuNetwork(p, net, fp16=True, options=GpuOptions(max_batch=1024, winograd=wino))
    for n in (64, 256, 1024):
        b = PlanesBatch(batch(n).masks, np.ones((n, 112), np.float32))
        for _ in range(3):
            g.submit(b).result()
        ts = []
        for _ in range(20):
            t0 = time.perf_counter()
            g.submit(b).result()
            ts.append(time.perf_counter() - t0)
        med = float(np.median(ts))
        tflops = net.flops_per_position() * n / med / 1e12
        line = f"median ms {med * 1e3:.3f} nps {n / med:.0f} TFLOP/s {tflops:.1f}"
        print(preset, "winograd" if wino else "im2col", "fp16 graphs batch", n, line, flush=True)
    g.close()
p.close()
