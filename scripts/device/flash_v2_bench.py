"""The chess flash kernel alone, one-shot (``flash=v1``) against persistent (``flash=v2``), on one
NVIDIA GPU: the kernel timing step of ``scripts/device/flash_v2_check``.

Two measurements per head configuration and batch size, each the median of ``--iters`` launches
timed with CUDA events, the kernels alternating in ``--rounds`` rounds (v1 v2 v2c v2s3, then
reversed, ...; v2c: the persistent kernel with contiguous ranges of pairs, ``attn_interleave=0``;
v2s3: with 3 stages):

* ``probe``: ``lc0py.backends.gpu.flash_probe`` on fresh random inputs (the QKV rows with their
  compress columns, a smolgen-like bias, Q/V biases), the same arguments the backend passes;
* ``net``: ``GpuNetwork.time_attention`` -- one encoder layer's attention on the buffers of a
  1-layer net after a real batch, the kernel swapped in place (``set_flash_overrides``), as
  ``scripts/bench/gpu_bench.py`` reports ``attn_flash_ms``.

Each row also gives the bytes one launch must move (Q, K, V read, the bias read, O written: all
fp16) over the time (effective GB/s) and the FLOPs (2·2·64·64·d per position and head) over the
time, so the result reads against the HBM roofline (H100 SXM: 3.35 TB/s).

    PYTHONPATH=$PWD python3 scripts/device/flash_v2_bench.py --json /tmp/flash.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Any

import numpy as np

PRESETS = {"t82": (24, 32), "t82-h12": (12, 64), "t82-h8": (8, 96), "t82-h6": (6, 128)}
#: v1: the one-shot kernel; v2: the persistent kernel as the backend picks it (pairs interleaved over
#: the blocks); v2c: with a contiguous range of pairs per block; v2s3: with 3 stages (two pairs in
#: flight while one is computed; fewer blocks per SM fit)
KERNELS = {
    "v1": {"persistent": 0},
    "v2": {"persistent": 1},
    "v2c": {"persistent": 1, "interleave": 0},
    "v2s3": {"persistent": 1, "stages": 3},
}


def launch_bytes(batch: int, heads: int, depth: int) -> int:
    """fp16 bytes one launch reads and writes: Q, K, V (3·64·D), the bias (H·64·64), O (64·D)."""
    d_model = heads * depth
    return 2 * batch * (3 * 64 * d_model + heads * 64 * 64 + 64 * d_model)


def launch_flops(batch: int, heads: int, depth: int) -> int:
    return 4 * 64 * 64 * depth * heads * batch


def planes_batch(n: int, seed: int = 0) -> Any:
    from lc0py.backends.base import PlanesBatch

    rng = np.random.default_rng(seed)
    bits = rng.random((n, 112, 64)) < 0.12
    masks = (bits.astype(np.uint64) << np.arange(64, dtype=np.uint64)).sum(axis=2, dtype=np.uint64)
    return PlanesBatch(masks, rng.random((n, 112)).astype(np.float32))


def row(kind: str, preset: str, batch: int, times: dict[str, list[float]]) -> dict[str, Any]:
    heads, depth = PRESETS[preset]
    out: dict[str, Any] = {"what": kind, "preset": preset, "heads": heads, "depth": depth, "batch": batch}
    nbytes, flops = launch_bytes(batch, heads, depth), launch_flops(batch, heads, depth)
    for name, ts in times.items():
        ms = statistics.median(ts)
        out[f"{name}_ms"] = ms
        out[f"{name}_rounds_ms"] = ts
        out[f"{name}_gbs"] = nbytes / ms / 1e6
        out[f"{name}_tflops"] = flops / ms / 1e9
    out["mbytes"] = nbytes / 1e6
    out["speedup"] = out["v1_ms"] / out["v2_ms"]
    for name in times:
        out[f"speedup_{name}"] = out["v1_ms"] / out[f"{name}_ms"]
    return out


def order(rounds: int) -> list[str]:
    """v1 v2 v2c v2s3, v2s3 v2c v2 v1, ...: alternating, so drift (clocks, temperature) hits all
    alike."""
    seq: list[str] = []
    for r in range(rounds):
        seq += list(KERNELS) if r % 2 == 0 else list(reversed(KERNELS))
    return seq


def bench_probe(platform: Any, preset: str, batch: int, rounds: int, iters: int) -> dict[str, Any]:
    from lc0py.backends.gpu.flash_probe import FlashInputs, FlashRunner

    heads, depth = PRESETS[preset]
    run = FlashRunner(platform, FlashInputs.random(batch, heads, depth, seed=batch + heads))
    try:
        times: dict[str, list[float]] = {name: [] for name in KERNELS}
        for name in order(rounds):
            times[name].append(run.time_ms(KERNELS[name], iters=iters))
        choices = {name: run.choose(over) for name, over in KERNELS.items()}
    finally:
        run.close()
    out = row("probe", preset, batch, times)
    out["params"] = {n: str(c.params) for n, c in choices.items()}
    return out


def bench_net(platform: Any, preset: str, sizes: list[int], rounds: int, iters: int) -> list[dict[str, Any]]:
    from lc0py.backends.gpu.network import GpuNetwork
    from lc0py.backends.gpu.options import GpuOptions
    from lc0py.weights.presets import random_network

    net = random_network(preset, 3, layers=1)
    gpu = GpuNetwork(platform, net, fp16=True, options=GpuOptions(max_batch=max(sizes), graphs=False))
    rows = []
    try:
        for n in sizes:
            gpu.submit(planes_batch(n), flash=True).result()  # real activations in the buffers
            times: dict[str, list[float]] = {name: [] for name in KERNELS}
            for name in order(rounds):
                choice = gpu.set_flash_overrides(KERNELS[name])
                if not choice.is_flash:
                    raise RuntimeError(f"{name}: {choice.reason}")
                times[name].append(gpu.time_attention(n, True, iters=iters))
            rows.append(row("net", preset, n, times))
    finally:
        gpu.close()
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--presets", default="t82,t82-h12", help="head configurations (default t82,t82-h12)")
    ap.add_argument("--sizes", default="64,256,1024", help="batch sizes (default 64,256,1024)")
    ap.add_argument("--rounds", type=int, default=4, help="alternating rounds (default 4)")
    ap.add_argument("--iters", type=int, default=50, help="timed launches per round (default 50)")
    ap.add_argument("--json", metavar="FILE", help="write the rows as JSON here too")
    args = ap.parse_args()
    presets = [p.strip() for p in args.presets.split(",") if p.strip()]
    bad = [p for p in presets if p not in PRESETS]
    if bad:
        known = ", ".join(PRESETS)
        print(f"flash_v2_bench: --presets: unknown {', '.join(bad)} (known: {known})", file=sys.stderr)
        return 2
    try:
        sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        print(f"flash_v2_bench: --sizes '{args.sizes}' is not a list of integers", file=sys.stderr)
        return 2
    if not sizes or min(sizes) < 1 or args.rounds < 1 or args.iters < 1:
        print("flash_v2_bench: --sizes, --rounds and --iters must be positive", file=sys.stderr)
        return 2
    from lc0py.gpu.cuda_platform import probe

    reason = probe()
    if reason is not None:
        print(f"flash_v2_bench: no usable NVIDIA GPU: {reason}", file=sys.stderr)
        return 2
    from lc0py.gpu.cuda_platform import CudaPlatform

    platform = CudaPlatform(0)
    info = platform.info
    print(f"device {info.name} {info.arch}, {info.sm_count} SMs", flush=True)
    rows: list[dict[str, Any]] = []
    t0 = time.time()
    try:
        for preset in presets:
            for n in sizes:
                rows.append(bench_probe(platform, preset, n, args.rounds, args.iters))
                print(json.dumps(rows[-1]), flush=True)
            for r in bench_net(platform, preset, sizes, args.rounds, args.iters):
                rows.append(r)
                print(json.dumps(r), flush=True)
    finally:
        platform.close()
    print(f"\n{info.name}, medians of {args.iters} launches x {args.rounds} alternating rounds "
          f"({time.time() - t0:.0f} s)\n")
    others = [k for k in KERNELS if k != "v1"]
    print("| what | preset | batch | MB/launch | v1 ms | " + " | ".join(f"{k} ms" for k in others)
          + " | " + " | ".join(f"v1/{k}" for k in others) + " | v1 GB/s | v2 GB/s | v2 TFLOP/s |")
    print("|---|---|" + "---:|" * (6 + 2 * len(others)))
    for r in rows:
        print(f"| {r['what']} | {r['preset']} | {r['batch']} | {r['mbytes']:.1f} | {r['v1_ms']:.4f} | "
              + " | ".join(f"{r[f'{k}_ms']:.4f}" for k in others) + " | "
              + " | ".join(f"{r[f'speedup_{k}']:.2f}x" for k in others)
              + f" | {r['v1_gbs']:.0f} | {r['v2_gbs']:.0f} | {r['v2_tflops']:.1f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": info.name, "arch": info.arch, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
