#!/usr/bin/env python3
"""GPU timings for docs/performance.md (benchmark only; never a test).

* end-to-end nps of ``GpuNetwork`` (graphs on, H2D of the masks and D2H of the outputs inside
  the timed region, as backendbench) per batch size, flash vs fallback;
* one layer's attention alone: flash kernel vs fallback GEMMs + softmax (device events, median);
* the fp16 GEMM ceiling through the same cuBLAS binding (8192^3, events, median);
* achieved TFLOP/s = flops_per_position x nps and its fraction of that ceiling.

Writes a JSON summary (``--json``) and prints a markdown table. Usage::

    PYTHONPATH=$PWD python3 scripts/bench/gpu_bench.py --preset t82 --sizes 1,64,256,1024 --json out.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time

import numpy as np


def planes_batch(n: int, seed: int = 0):  # type: ignore[no-untyped-def]
    from lc0py.backends.base import PlanesBatch

    rng = np.random.default_rng(seed)
    bits = rng.random((n, 112, 64)) < 0.12
    masks = (bits.astype(np.uint64) << np.arange(64, dtype=np.uint64)).sum(axis=2, dtype=np.uint64)
    return PlanesBatch(masks, rng.random((n, 112)).astype(np.float32))


def time_e2e(gpu, batch, iters: int, flash: bool) -> list[float]:  # type: ignore[no-untyped-def]
    for _ in range(3):
        gpu.submit(batch, flash=flash).result()
    times = []
    for _ in range(iters):
        t = time.perf_counter()
        out = gpu.submit(batch, flash=flash).result()
        float(out.policy[-1, -1])
        times.append(time.perf_counter() - t)
    return times


def profile_ops(gpu, n: int, reps: int = 3) -> list[tuple[str, float, int]]:  # type: ignore[no-untyped-def]
    """Device time per operation kind of one eager forward pass at batch ``n`` (events between
    every launch/GEMM; eager, so inter-op gaps are included only where the host is slower)."""
    p, ops = gpu.p, gpu.ops
    names = {v: k for k, v in vars(ops).items() if k.startswith("k_") and isinstance(v, int)}
    names.update({fn: f"k_ln{key}" for key, (fn, _) in ops._ln.items()})
    if gpu.model.attention.k_flash is not None:
        names[gpu.model.attention.k_flash] = "k_flash"
    events = []
    orig_launch, orig_gemm = p.launch, p.gemm

    def mark(label: str) -> None:
        ev = p.create_event(timing=True)
        ev.record(ops.main)
        events.append((label, ev))

    def launch(fn, *a, **k):  # type: ignore[no-untyped-def]
        mark(names.get(fn, f"kernel{fn}"))
        return orig_launch(fn, *a, **k)

    def gemm(stream, m, nn, kk, *a, **k):  # type: ignore[no-untyped-def]
        mark(f"gemm {m}x{nn}x{kk}" + (f" b{k['batch']}" if k.get("batch", 1) > 1 else ""))
        return orig_gemm(stream, m, nn, kk, *a, **k)

    batch = planes_batch(n)
    gpu.submit(batch, use_graph=False).result()
    totals: dict[str, list[float]] = {}
    fork = ops.fork
    ops.fork = False  # one stream, so consecutive events bracket one operation each
    p.launch, p.gemm = launch, gemm
    try:
        for _ in range(reps):
            events.clear()
            gpu.run_forward(n, gpu.uses_flash)
            mark("end")
            p.synchronize(ops.main)
            for (label, e0), (_, e1) in zip(events, events[1:], strict=False):
                totals.setdefault(label, []).append(e0.elapsed_ms(e1))
            for _, ev in events:
                p.destroy_event(ev)
    finally:
        p.launch, p.gemm = orig_launch, orig_gemm
        ops.fork = fork
    out = [(label, sum(v) / reps, len(v) // reps) for label, v in totals.items()]
    return sorted(out, key=lambda r: -r[1])


def torch_trace(gpu, n: int, reps: int = 5, order: int = 0) -> None:  # type: ignore[no-untyped-def]
    """Device time of every kernel inside the graph replays (CUPTI through torch.profiler, which
    records all kernels of the shared primary context), plus the replay's wall time: the gap
    between the two is launch/dependency idle time."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.init()
    batch = planes_batch(n)
    for _ in range(3):
        gpu.submit(batch).result()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        t = time.perf_counter()
        for _ in range(reps):
            gpu.submit(batch).result()
        wall = (time.perf_counter() - t) / reps
    events = [e for e in prof.key_averages()]
    total = sum(e.device_time_total for e in events) / reps / 1e3
    print(
        f"\ntorch.profiler batch {n}: wall {wall * 1e3:.3f} ms per batch, kernels+copies {total:.3f} ms "
        f"(idle/overhead {wall * 1e3 - total:.3f} ms)"
    )
    for e in sorted(events, key=lambda e: -e.device_time_total)[:25]:
        print(f"  {e.device_time_total / reps / 1e3:8.3f} ms  x{e.count // reps:<4d} {e.key[:110]}")
    if order:
        kern = [e for e in prof.events() if e.device_time_total > 0]
        per = len(kern) // reps
        print(f"  first {order} device events of the last replay (of {per}):")
        for e in kern[-per:][:order]:
            print(f"    {e.device_time_total:9.1f} us  {e.name[:90]}")


def gemm_ceiling(platform, n: int = 8192, iters: int = 20) -> float:  # type: ignore[no-untyped-def]
    """fp16 TFLOP/s of an n^3 GEMM (random data) through the platform's cuBLAS."""
    stream = platform.create_stream()
    nbytes = n * n * 2
    rng = np.random.default_rng(1)
    host = (rng.standard_normal(n * n) * 0.1).astype(np.float16)
    a, b, c = platform.alloc(nbytes), platform.alloc(nbytes), platform.alloc(nbytes)
    platform.copy_h2d(a, host, nbytes, stream)
    platform.copy_h2d(b, host, nbytes, stream)
    e0, e1 = platform.create_event(timing=True), platform.create_event(timing=True)
    times = []
    for i in range(iters + 3):
        e0.record(stream)
        platform.gemm(stream, n, n, n, a, n, b, n, c, n, dtype="fp16", trans_b=True)
        e1.record(stream)
        e1.synchronize()
        if i >= 3:
            times.append(e0.elapsed_ms(e1))
    for p in (a, b, c):
        platform.free(p)
    platform.destroy_stream(stream)
    return 2 * n**3 / (float(np.median(times)) * 1e-3) / 1e12


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", default="t82")
    ap.add_argument("--weights", default=None)
    ap.add_argument("--layers", type=int, default=None)
    ap.add_argument("--sizes", default="1,2,4,8,16,32,64,128,256,512,1024")
    ap.add_argument("--compare", default="64,256,1024", help="sizes where flash vs fallback is timed")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--fp32", action="store_true")
    ap.add_argument("--json", default=None)
    ap.add_argument("--profile", default="", help="batch sizes to profile per operation, e.g. 64,256")
    ap.add_argument(
        "--torch-profile",
        default="",
        help="batch sizes to trace with torch.profiler (CUPTI sees our kernels)",
    )
    ap.add_argument(
        "--variants", default="", help="flash param variants to time, e.g. 'min_blocks=2;warps=2'"
    )
    ap.add_argument(
        "--opts", default="", help="GPU backend options (--backend-opts syntax), e.g. 'ln_residual=on'"
    )
    args = ap.parse_args()

    from lc0py.backends.gpu.network import GpuNetwork
    from lc0py.backends.gpu.options import GpuOptions
    from lc0py.gpu.cuda_platform import CudaPlatform

    t0 = time.time()
    if args.weights:
        from lc0py.weights import load_network

        net = load_network(args.weights)
    else:
        from lc0py.weights.presets import random_network

        net = random_network(args.preset, 1, **({"layers": args.layers} if args.layers else {}))
    print(
        f"net ready in {time.time() - t0:.1f}s: {net.num_layers} layers, {net.heads} heads, "
        f"{net.flops_per_position() / 1e9:.3f} GFLOP/position",
        flush=True,
    )
    platform = CudaPlatform(0)
    sizes = [int(s) for s in args.sizes.split(",")]
    compare = [int(s) for s in args.compare.split(",") if s]
    options = dataclasses.replace(GpuOptions.from_text(args.opts), max_batch=max(sizes + compare))
    gpu = GpuNetwork(platform, net, fp16=not args.fp32, options=options)
    info = platform.info
    print(
        f"device {info.name} {info.arch} SMs {info.sm_count}; attention {gpu.flash_choice.kernel.value} "
        f"({gpu.flash_choice.reason}); options '{args.opts}', {gpu.fusions.describe()}",
        flush=True,
    )
    ceiling = gemm_ceiling(platform)
    fpp = net.flops_per_position()
    print(f"fp16 GEMM ceiling (8192^3 cuBLAS): {ceiling:.0f} TFLOP/s", flush=True)
    rows = []
    for n in sizes:
        batch = planes_batch(n)
        t = time_e2e(gpu, batch, args.iters, flash=True)
        med = float(np.median(t))
        nps = n / med
        row = {
            "batch": n,
            "median_ms": med * 1e3,
            "nps": nps,
            "mean_nps": n * len(t) / sum(t),
            "tflops": fpp * nps / 1e12,
            "frac_ceiling": fpp * nps / 1e12 / ceiling,
        }
        if n in compare:
            tf = time_e2e(gpu, batch, args.iters, flash=False)
            row["nps_fallback"] = n / float(np.median(tf))
            row["flash_speedup"] = nps / row["nps_fallback"]
            gpu.submit(batch, flash=True).result()  # real activations in the buffers
            row["attn_flash_ms"] = gpu.time_attention(n, flash=True)
            row["attn_fallback_ms"] = gpu.time_attention(n, flash=False)
            row["attn_speedup"] = row["attn_fallback_ms"] / row["attn_flash_ms"]
        rows.append(row)
        print(json.dumps(row), flush=True)
    print()
    print(
        "| batch | nps (median) | ms/batch | TFLOP/s | of ceiling | nps fallback | flash/fallback "
        "| attn flash ms | attn fallback ms | attn ratio |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        fb = f"{r['nps_fallback']:.0f}" if "nps_fallback" in r else ""
        sp = f"{r['flash_speedup']:.2f}x" if "flash_speedup" in r else ""
        af = f"{r['attn_flash_ms']:.3f}" if "attn_flash_ms" in r else ""
        ab = f"{r['attn_fallback_ms']:.3f}" if "attn_fallback_ms" in r else ""
        ar = f"{r['attn_speedup']:.2f}x" if "attn_speedup" in r else ""
        print(
            f"| {r['batch']} | {r['nps']:.0f} | {r['median_ms']:.3f} | {r['tflops']:.1f} "
            f"| {100 * r['frac_ceiling']:.1f}% "
            f"| {fb} | {sp} | {af} | {ab} | {ar} |"
        )
    for n in [int(x) for x in args.profile.split(",") if x]:
        ops = profile_ops(gpu, n)
        total = sum(t for _, t, _ in ops)
        print(
            f"\nper-op device time, batch {n}: total {total:.3f} ms ({n / total * 1e3:.0f} nps without gaps)"
        )
        for label, t, cnt in ops:
            print(f"  {label:<28} {t:8.3f} ms  {100 * t / total:5.1f}%  x{cnt}")
    for n in [int(x) for x in args.torch_profile.split(",") if x]:
        try:
            torch_trace(gpu, n, order=40)
        except Exception as exc:  # the profile above stays usable without CUPTI
            print(f"\ntorch.profiler batch {n}: failed: {exc!r}", flush=True)
    for var in [v for v in args.variants.split(";") if v]:
        ov = {kv.split("=")[0]: int(kv.split("=")[1]) for kv in var.split(",")}
        opts = GpuOptions(max_batch=max(compare)).with_flash_overrides(ov)
        g2 = GpuNetwork(platform, net, fp16=not args.fp32, options=opts)
        res = []
        for n in compare:
            b = planes_batch(n)
            g2.submit(b).result()
            res.append(
                f"b{n}: attn {g2.time_attention(n, True):.4f} ms, "
                f"e2e {n / float(np.median(time_e2e(g2, b, args.iters, True))):.0f} nps"
            )
        print(f"variant {var} ({g2.flash_choice.kernel.value}): " + "; ".join(res), flush=True)
        g2.close()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "device": info.name,
                    "arch": info.arch,
                    "ceiling_tflops": ceiling,
                    "flops_per_position": fpp,
                    "attention": gpu.flash_choice.kernel.value,
                    "rows": rows,
                },
                f,
                indent=1,
            )
    gpu.close()
    platform.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
