"""FP8's accuracy estimated on the CPU: the numpy emulation of the cuda-fp8 arithmetic
(``lc0py.backends.gpu.fp8_emulation``) against the float32 reference, in the decision terms of
``scripts/device/fp8_accuracy.py`` (top-1 legal move agreement, mean/max |dQ|, max legal-move
probability error), on legal positions from the search's compiled board. No GPU; slow (a numpy
forward pass of the net per position and variant): a few dozen positions of T82 take minutes.
``--ablation``: also each FP8 GEMM alone in FP8 (the others on fp16-rounded operands) and none
("fp16-rounded": a stand-in for the fp16 path), to see which GEMM costs the most accuracy.

    PYTHONPATH=$PWD python3 scripts/compare/fp8_cpu_estimate.py --preset t82 --positions 64
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.getcwd())
sys.path.insert(0, os.path.join(os.getcwd(), "scripts", "device"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="t82")
    ap.add_argument("--layers", type=int, default=None)
    ap.add_argument("--net-seed", type=int, default=1)
    ap.add_argument("--positions", type=int, default=64)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--chunk", type=int, default=32)
    ap.add_argument("--ablation", action="store_true", help="also one FP8 GEMM at a time, and none")
    args = ap.parse_args()
    from fp8_accuracy import compare, positions  # scripts/device/fp8_accuracy.py

    from lc0py.backends.base import PlanesBatch
    from lc0py.backends.gpu.fp8_emulation import FP8_GEMMS, fp8_forward
    from lc0py.model import forward
    from lc0py.weights.presets import random_network

    net = random_network(args.preset, args.net_seed, **({"layers": args.layers} if args.layers else {}))
    batch, legal = positions(args.positions, args.seed, int(net.format.input))
    # name -> (per-channel weight scales, GEMMs in FP8, per-row activation scales)
    variants: dict[str, tuple[bool, frozenset[str], bool]] = {
        "fp8-outer": (True, FP8_GEMMS, True),  # cuda-fp8's default (fp8_scales=outer)
        "fp8-channel": (True, FP8_GEMMS, False),
        "fp8-tensor": (False, FP8_GEMMS, False),
    }
    if args.ablation:
        variants["fp16-rounded"] = (True, frozenset(), False)
        for g in ("qkv", "out", "smolgen"):
            variants[f"only-{g}"] = (True, frozenset({g}), False)
        variants["only-ffn"] = (True, frozenset({"ffn1", "ffn2"}), False)
        variants["all-but-ffn"] = (True, frozenset({"qkv", "out", "smolgen"}), False)
    outs: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {k: [] for k in ("float32", *variants)}
    t0 = time.time()
    for i in range(0, len(legal), args.chunk):
        part = PlanesBatch(batch.masks[i : i + args.chunk], batch.values[i : i + args.chunk])
        planes = part.dense(np.float32)
        results = {"float32": forward(net, planes, np.float32)}
        for name, (per_channel, gemms, per_row) in variants.items():
            results[name] = fp8_forward(net, planes, per_channel=per_channel, gemms=gemms, per_row=per_row)
        for name, o in results.items():
            q = o.wdl[:, 0] - o.wdl[:, 2]
            outs[name].append((np.asarray(o.policy, np.float64), np.asarray(q, np.float64)))
    joined = {k: (np.concatenate([a for a, _ in v]), np.concatenate([b for _, b in v]))
              for k, v in outs.items()}
    rows = {name: compare(joined[name], joined["float32"], legal) for name in variants}
    label = f"{args.preset} seed {args.net_seed}" + (f" {args.layers} layers" if args.layers else "")
    seconds = round(time.time() - t0, 1)
    summary = {"net": label, "positions": len(legal), "chunk": args.chunk, "seconds": seconds,
               "vs_float32": rows}
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
