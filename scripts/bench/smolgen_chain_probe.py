#!/usr/bin/env python3
"""Where ``smolgen_chain`` (kernels/smolgen_chain.hip) spends a launch, on an NVIDIA GPU.

For each configuration (outputs in flight a warp in steps 0 and 2, blocks a launch) and row count,
the kernel runs on T82's widths with random fp16 weights: its time a launch (CUDA events over
``--reps`` launches), its worst relative error against numpy float64, and, from a build with
``LC0_SC_CLOCKS``, block 0's global-timer stamps at each step's start and end (step 0 compress,
barrier 1, step 1 dense 1, barrier 2, step 2 LN1 + dense 2, barrier 3, step 3 LN2).

    PYTHONPATH=$PWD python3 scripts/bench/smolgen_chain_probe.py [--configs 4x8x32,8x24x32] [--rows 1,4]

A configuration ``C0xG2xBLOCKS``: LC0_SC_C0, LC0_SC_G2 and the grid (the backend launches
``ops.smolgen_chain_blocks`` blocks with the kernel's default C0 and G2).
"""

from __future__ import annotations

import argparse
import ctypes
import sys

import numpy as np

from lc0py.backends.gpu.ops import smolgen_chain_config, smolgen_chain_shared_bytes
from lc0py.backends.gpu.weights import SMOLGEN_CHAIN_MAX
from lc0py.errors import BackendUnavailable
from lc0py.gpu.compile_cache import KernelCache
from lc0py.gpu.factory import create_platform
from lc0py.model.activations import activation

P, I, F = ctypes.c_void_p, ctypes.c_int, ctypes.c_float
SEQ, E, HC, HS, N2 = 64, 768, 32, 256, 6144
ACT_SWISH = 7
STEPS = ["compress", "barrier 1", "dense 1", "barrier 2", "LN1 + dense 2", "barrier 3", "LN2"]


def _layernorm(v: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mean = v.mean(axis=1, keepdims=True)
    var = ((v - mean) ** 2).mean(axis=1, keepdims=True)
    return (v - mean) / np.sqrt(var + eps) * g + b


def parse_configs(text: str) -> list[tuple[int, int, int]]:
    """``C0xG2xBLOCKS,...`` -> [(c0, g2, blocks)]; a malformed entry is one ``ValueError`` line."""
    out = []
    for part in text.split(","):
        fields = part.strip().split("x")
        if len(fields) != 3 or not all(f.isdigit() and int(f) > 0 for f in fields):
            raise ValueError(
                f"--configs: '{part}' is not C0xG2xBLOCKS (three positive integers, e.g. 8x8x96)"
            )
        out.append((int(fields[0]), int(fields[1]), int(fields[2])))
    return out


def parse_rows(text: str) -> list[int]:
    """``1,4`` -> [1, 4]: each 1 to ``SMOLGEN_CHAIN_MAX``; else one ``ValueError`` line."""
    rows = []
    for part in text.split(","):
        if not part.strip().isdigit() or not 1 <= int(part) <= SMOLGEN_CHAIN_MAX:
            raise ValueError(f"--rows: '{part}' is not a position count 1 to {SMOLGEN_CHAIN_MAX}")
        rows.append(int(part))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", default="4x8x32,8x24x32,8x8x96,8x6x128")
    ap.add_argument("--rows", default="1,4")
    ap.add_argument("--reps", type=int, default=200)
    args = ap.parse_args()
    try:
        configs, row_counts = parse_configs(args.configs), parse_rows(args.rows)
        plat = create_platform("nvidia", 0)
    except (ValueError, BackendUnavailable) as exc:
        print(f"smolgen_chain_probe: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    cache = KernelCache(plat)
    stream = plat.create_stream()
    rng = np.random.default_rng(1)
    k1 = SEQ * HC
    host = {
        "x": rng.standard_normal((4 * SEQ, E)) + 0.2,
        "wc": rng.standard_normal((HC, E)) / np.sqrt(E),
        "w1": rng.standard_normal((HS, k1)) / np.sqrt(k1),
        "b1": 0.5 * rng.standard_normal(HS),
        "g1": 1.0 + 0.2 * rng.standard_normal(HS),
        "be1": 0.1 * rng.standard_normal(HS),
        "w2": rng.standard_normal((N2, HS)) / np.sqrt(HS),
        "b2": 0.5 * rng.standard_normal(N2),
        "g2": 1.0 + 0.2 * rng.standard_normal(N2),
        "be2": 0.1 * rng.standard_normal(N2),
    }
    f16 = {k: np.ascontiguousarray(v.astype(np.float16)) for k, v in host.items()}
    dev = {}
    for k, a in f16.items():
        dev[k] = plat.alloc(a.nbytes)
        plat.copy_h2d(dev[k], a, a.nbytes, stream)
    out = plat.alloc(4 * N2 * 2)
    scratch = plat.alloc(4 * (k1 + HS + N2) * 4)
    sync = plat.alloc(4 * 32)
    plat.memset(sync, 0, 4 * 32, stream)
    plat.synchronize(stream)
    f = {k: v.astype(np.float32).astype(np.float64) for k, v in f16.items()}
    eps = (1e-3, 1e-3)
    start, end = plat.create_event(timing=True), plat.create_event(timing=True)
    print(f"{plat.info.name}, {plat.info.sm_count} SMs; T82 widths, fp16, swish; {args.reps} launches a time")
    for c0, g2, blocks in configs:
        base = {**smolgen_chain_config(SEQ, E, HC, HS, N2), "LC0_SC_C0": c0, "LC0_SC_G2": g2, "LC0_FP16": 1}
        fn = cache.function("smolgen_chain.hip", "smolgen_chain", base)
        fn_clocks = cache.function("smolgen_chain.hip", "smolgen_chain", {**base, "LC0_SC_CLOCKS": 1})
        smem = smolgen_chain_shared_bytes(base)
        for rows in row_counts:
            kargs = [P(dev[k]) for k in ("x", "wc", "w1", "b1", "g1", "be1", "w2", "b2", "g2", "be2")]
            kargs += [P(out), P(scratch), P(sync), I(rows), F(eps[0]), F(eps[1]), I(ACT_SWISH)]
            for _ in range(5):
                plat.launch(fn, (blocks, 1, 1), (256, 1, 1), smem, stream, kargs)
            plat.event_record(start.handle, stream)
            for _ in range(args.reps):
                plat.launch(fn, (blocks, 1, 1), (256, 1, 1), smem, stream, kargs)
            plat.event_record(end.handle, stream)
            plat.synchronize(stream)
            us = 1e3 * plat.event_elapsed_ms(start.handle, end.handle) / args.reps
            got16 = np.empty((rows, N2), np.float16)
            plat.copy_d2h(got16, out, got16.nbytes, stream)
            plat.launch(fn_clocks, (blocks, 1, 1), (256, 1, 1), smem, stream, kargs)
            stamps = np.empty(2 + 16, np.uint32)
            plat.copy_d2h(stamps, sync, stamps.nbytes, stream)
            plat.synchronize(stream)
            t = stamps[2:].view(np.uint64)[:8].astype(np.int64)
            c = (f["x"][: rows * SEQ] @ f["wc"].T).reshape(rows, k1)
            s1 = _layernorm(activation(ACT_SWISH, c @ f["w1"].T + f["b1"]), f["g1"], f["be1"], eps[0])
            want = _layernorm(activation(ACT_SWISH, s1 @ f["w2"].T + f["b2"]), f["g2"], f["be2"], eps[1])
            got = got16.astype(np.float64)
            err = max(float(np.linalg.norm(got[r] - want[r]) / np.linalg.norm(want[r])) for r in range(rows))
            steps = ", ".join(f"{name} {(t[i + 1] - t[i]) / 1e3:.1f}" for i, name in enumerate(STEPS))
            print(f"C0 {c0:2d} G2 {g2:2d} blocks {blocks:3d} rows {rows}: {us:6.1f} us a launch, "
                  f"error {err:.1e}, counters {stamps[:2].tolist()}; block 0 (us): {steps}")
    plat.close()


if __name__ == "__main__":
    main()
