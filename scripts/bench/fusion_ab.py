#!/usr/bin/env python3
"""Same-process A/B of GPU backend option variants with backendbench's own measurement (benchmark
only; never a test; called by scripts/device/gpu_fusion_ab).

The net is loaded once and one backend per variant is kept open, so a round costs only the timed
batches: each round times every variant at every size (``lc0py.tools.backendbench.bench_size``:
the same encode -> H2D -> graph -> D2H batches as ``lc0py backendbench``), the variants' order
rotated each round so no variant always follows the same one. Every row is printed as a JSON line
(backendbench's fields plus ``variant`` and ``round``); the summary per size is the median over
rounds of each variant's median nps and its ratio to the first variant, with the spread of the
first variant's own rounds as the noise to compare against.

    PYTHONPATH=$PWD python3 scripts/bench/fusion_ab.py --weights t82.pb.gz \\
        --variants "off=ln_residual=off,smolgen_branch=off;default=;both=ln_residual=on,smolgen_branch=on"
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from typing import Any


def parse_variants(text: str) -> list[tuple[str, str]]:
    """``name=opts;name=opts`` -> [(name, opts)] (opts in --backend-opts syntax, may be empty)."""
    out = []
    for item in (v for v in text.split(";") if v.strip()):
        name, _, opts = item.partition("=")
        out.append((name.strip(), opts.strip()))
    if not out:
        raise SystemExit("fusion_ab: --variants: none given")
    return out


def check_outputs(backends: dict[str, Any], n: int) -> None:
    """Every variant's policy, WDL and moves-left on one batch of ``n`` random-playout positions
    (graphs, the timed path) against the first variant's: a race between the streams shows here
    at the benchmark's own batch sizes, where the GPU tests' small batches might not expose it."""
    from lc0py.backends.accuracy import relative_error
    from lc0py.tools.verify import random_games_batch

    names = list(backends)
    batch = random_games_batch(n, backends[names[0]].info.input_format, seed=11)
    ref = backends[names[0]].evaluate(batch)
    want = {k: getattr(ref, k).copy() for k in ("policy", "wdl", "moves_left")}
    for name in names[1:]:
        out = backends[name].evaluate(batch)
        errs = {k: relative_error(getattr(out, k), v) for k, v in want.items()}
        verdict = "ok" if max(errs.values()) <= 2e-2 else "MISMATCH"
        text = ", ".join(f"{k} {e:.1e}" for k, e in errs.items())
        print(f"# check {name} vs {names[0]} at {n} positions: {text} {verdict}", file=sys.stderr)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--weights", required=True)
    ap.add_argument("--backend", default="cuda-fp16")
    ap.add_argument("--variants", required=True, help="name=opts;name=opts (the first is the baseline)")
    ap.add_argument("--sizes", default="64,256,1024")
    ap.add_argument("--batches", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=3, help="batches per variant and size before each timing")
    ap.add_argument(
        "--check",
        type=int,
        default=256,
        help="positions of the outputs check against the first variant (0: none)",
    )
    args = ap.parse_args()

    from lc0py.backends.registry import create_backend
    from lc0py.chess import PositionHistory
    from lc0py.tools.backendbench import bench_size, run_batch
    from lc0py.weights import load_network

    variants = parse_variants(args.variants)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    net = load_network(args.weights)
    history = PositionHistory.from_fen(None)
    backends: dict[str, Any] = {}
    try:
        for name, opts in variants:
            gpu_opts = f"max_batch={max(sizes)}" if args.backend != "numpy" else ""  # numpy: plumbing checks
            text = ",".join(o for o in (gpu_opts, opts) if o)
            backends[name] = create_backend(args.backend, net, text)
            fusions = getattr(getattr(backends[name], "gpu", None), "fusions", None)
            print(f"# {name}: options '{opts}'; {fusions.describe() if fusions else ''}", file=sys.stderr)
        if args.check:
            check_outputs(backends, args.check)
        rows: list[dict[str, Any]] = []
        for r in range(args.rounds):
            order = variants[r % len(variants) :] + variants[: r % len(variants)]
            for name, _ in order:
                backend = backends[name]
                fmt = backend.info.input_format
                for size in sizes:
                    for _ in range(args.warmup):
                        run_batch(backend, history, fmt, size)
                    stats = bench_size(backend, history, fmt, size, args.batches)
                    row = {"variant": name, "round": r + 1, "backend": backend.name, **stats.as_dict()}
                    rows.append(row)
                    print(json.dumps(row), flush=True)
        base = variants[0][0]
        print(f"# median nps over {args.rounds} rounds; ratio to '{base}'", file=sys.stderr)
        for size in sizes:
            ref_vals = [x["median_nps"] for x in rows if x["size"] == size and x["variant"] == base]
            ref = statistics.median(ref_vals)
            spread = (max(ref_vals) - min(ref_vals)) / ref
            print(f"# batch {size}: '{base}' spread over rounds {100 * spread:.1f} %", file=sys.stderr)
            for name, _ in variants:
                vals = [x["median_nps"] for x in rows if x["size"] == size and x["variant"] == name]
                med = statistics.median(vals)
                each = ", ".join(f"{v:.0f}" for v in vals)
                print(f"#   {name:<16} {med:9.0f} ({each})  x{med / ref:.3f}", file=sys.stderr)
    finally:
        for backend in backends.values():
            backend.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
