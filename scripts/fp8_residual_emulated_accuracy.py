"""Residual FP8 schemes on the CPU: the numpy emulation (``fp8_residual_emulation.py``, the device's
arithmetic) against the float32 reference, in issue 28's terms (top-1 move over the legal moves,
mean/max |dQ|, max legal-move probability error), per net and scheme:

* ``rtn``: round-to-nearest e4m3 weights, per-channel scales (the uncalibrated path);
* ``gptq``: the calibrated codes (``lc0py calibrate``'s, computed here on seed-1 positions,
  never the evaluated ones);
* ``gptq+conv1-fp16``: gptq with every block's first convolution left in fp16 (information: what
  the targets would cost in FP8 FLOPs).

Activations per tensor per batch of 64 (as the device at batch 64). CPU only:

    PYTHONPATH=$PWD python3 scripts/fp8_residual_emulated_accuracy.py NET.pb.gz... --positions 1024
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

sys.path.insert(0, "scripts/device")


def main() -> int:
    from fp8_accuracy import compare, positions  # type: ignore[import-not-found]

    from lc0py.backends.gpu.fp8_calibration import calibrate
    from lc0py.backends.gpu.fp8_residual_emulation import fp8_residual_forward
    from lc0py.model import forward
    from lc0py.tools.calibrate import DEFAULT_POSITIONS, SEED
    from lc0py.tools.verify import random_games_batch
    from lc0py.weights import load_network

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("nets", nargs="+")
    ap.add_argument("--positions", type=int, default=1024)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--schemes", default="rtn,gptq,gptq+conv1-fp16")
    args = ap.parse_args()
    print("| net | scheme | positions | top-1 = float32 | mean \\|dQ\\| | max \\|dQ\\| "
          "| max legal-prob err |")
    print("|---|---|---|---|---|---|---|")
    for path in args.nets:
        net = load_network(path)
        batch, legal = positions(args.positions, args.seed, int(net.format.input))
        planes = batch.dense(np.float32)
        ref = forward(net, planes)
        q_ref = np.asarray(ref.wdl[:, 0] - ref.wdl[:, 2], np.float64)
        ref_out = (np.asarray(ref.policy, np.float64), q_ref)
        t0 = time.time()
        cal_planes = random_games_batch(DEFAULT_POSITIONS, int(net.format.input), SEED).dense(np.float32)
        cal = calibrate(net, cal_planes)
        cal_s = time.time() - t0
        n_convs = 1 + 2 * net.num_blocks
        for scheme in args.schemes.split(","):
            conv1_fp16 = "conv1-fp16" in scheme  # FP8: the input convolution and every conv2
            convs = frozenset(i for i in range(n_convs) if i % 2 == 0) if conv1_fp16 else None
            c = cal if scheme.startswith("gptq") else None
            pols, qs = [], []
            for i in range(0, len(planes), 64):
                out = fp8_residual_forward(net, planes[i : i + 64], convs=convs, calibration=c)
                pols.append(np.asarray(out.policy, np.float64))
                qs.append(np.asarray(out.wdl[:, 0] - out.wdl[:, 2], np.float64))
            m = compare((np.concatenate(pols), np.concatenate(qs)), ref_out, legal)
            name = path.rsplit("/", 1)[-1].removesuffix(".pb.gz")
            print(f"| {name} | {scheme} | {m['positions']} | {m['top1_agreement']:.3f} | "
                  f"{m['mean_abs_dq']:.4f} | {m['max_abs_dq']:.3f} | {m['max_legal_prob_err']:.3f} |",
                  flush=True)
        print(f"<!-- {path}: calibration {cal_s:.0f} s -->", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
