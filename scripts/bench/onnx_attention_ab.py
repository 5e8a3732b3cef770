#!/usr/bin/env python3
"""Plain vs contrib attention on ONNX Runtime's CPU provider, paired so machine load cancels.

    python scripts/bench/onnx_attention_ab.py NET.pb.gz 1,8,32 REPS

One intra-op thread, this process's CPU time; each repetition runs both models back to back
(alternating which goes first) and records the time ratio plain/contrib. Prints the median ratio
with its interquartile range and the CPU-time nps of each. A benchmark, not a test.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np
import onnxruntime as ort

from lc0py.backends.onnx.export import network_to_onnx
from lc0py.weights import load_network


def main() -> None:
    net = load_network(sys.argv[1])
    sizes = [int(v) for v in sys.argv[2].split(",")]
    reps = int(sys.argv[3])
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.intra_op_num_threads = 1
    sessions = {
        k: ort.InferenceSession(network_to_onnx(net, attention=k).SerializeToString(), so)  # type: ignore[arg-type]
        for k in ("plain", "contrib")
    }
    for b in sizes:
        x = (np.random.default_rng(0).random((b, 112, 8, 8)) < 0.1).astype(np.float32)
        for s in sessions.values():
            s.run(None, {"/input/planes": x})
        ratios, times = [], {k: [] for k in sessions}
        for r in range(reps):
            t: dict[str, float] = {}
            for k in ("plain", "contrib") if r % 2 == 0 else ("contrib", "plain"):
                t0 = time.process_time()
                sessions[k].run(None, {"/input/planes": x})
                t[k] = max(time.process_time() - t0, 1e-9)
                times[k].append(t[k])
            ratios.append(t["plain"] / t["contrib"])
        q25, q50, q75 = np.percentile(ratios, [25, 50, 75])
        nps = ", ".join(f"{k} {b / np.median(v):.1f}" for k, v in times.items())
        print(f"batch {b}: time plain/contrib median {q50:.3f} (IQR {q25:.3f}-{q75:.3f}); CPU-time nps {nps}")
    print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
