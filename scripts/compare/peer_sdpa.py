#!/usr/bin/env python3
"""Peer for ``lc0py attnbench`` (not part of lc0py; torch is not a dependency): PyTorch's
``F.scaled_dot_product_attention`` on exactly the shapes of an attnbench JSON file, timed the same
way (fp16 ``[B, H, L, d]`` inputs already on the device, CUDA events around each call, warm-up
first), with its peak extra memory (``torch.cuda.max_memory_allocated`` beyond the inputs), its
output checked against lc0py's flash kernel on the same inputs, and a side-by-side table.

    PYTHONPATH=$PWD python3 scripts/compare/peer_sdpa.py attnbench.json [--iters 20] [--json peer.json]
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np
import torch
import torch.nn.functional as F


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("attnbench_json")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    from lc0py.attention import attention
    from lc0py.attention.gpu import GpuAttention

    eng = GpuAttention(vendor="nvidia")
    rows = json.load(open(args.attnbench_json))["rows"]
    dev = torch.device("cuda")
    out_rows = []
    print(
        f"peer: torch {torch.__version__} on {torch.cuda.get_device_name()}; "
        f"SDPA backends: flash={torch.backends.cuda.flash_sdp_enabled()} "
        f"mem_efficient={torch.backends.cuda.mem_efficient_sdp_enabled()}",
        file=sys.stderr,
    )
    for n, r in enumerate(rows):
        b, h, hk, seq, d, causal = r["batch"], r["heads"], r["kv_heads"], r["seq"], r["depth"], r["causal"]
        rng = np.random.default_rng(n)
        host = [rng.standard_normal((b, x, seq, d)).astype(np.float16) for x in (h, hk, hk)]
        q, k, v = (torch.from_numpy(x).to(dev) for x in host)
        kw = {"enable_gqa": True} if hk != h else {}
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        ms = []
        for i in range(args.warmup + args.iters):
            start.record()
            o = F.scaled_dot_product_attention(q, k, v, is_causal=causal, **kw)
            end.record()
            end.synchronize()
            if i >= args.warmup:
                ms.append(start.elapsed_time(end))
            if i < args.warmup + args.iters - 1:
                del o
        peak = torch.cuda.max_memory_allocated() - base
        ours = attention(*(eng.to_device(x) for x in host), layout="bhsd", causal=causal, engine=eng).numpy()
        theirs = o.float().cpu().numpy()
        err = float(np.linalg.norm(ours.astype(np.float64) - theirs) / max(np.linalg.norm(theirs), 1e-30))
        for ptr in list(eng._sizes):  # inputs / output of the check
            eng.free(ptr)
        flash = r["results"].get("flash", {})
        row = {
            "batch": b,
            "heads": h,
            "kv_heads": hk,
            "seq": seq,
            "depth": d,
            "causal": causal,
            "sdpa_mean_ms": float(np.mean(ms)),
            "sdpa_p50_ms": float(np.percentile(ms, 50)),
            "sdpa_p99_ms": float(np.percentile(ms, 99)),
            "sdpa_peak_bytes": int(peak),
            "flash_mean_ms": flash.get("mean_ms"),
            "flash_peak_bytes": flash.get("peak_bytes"),
            "flash_vs_sdpa_rel_err": err,
        }
        out_rows.append(row)
        del q, k, v, o
        torch.cuda.empty_cache()
    print(
        "| shape | lc0py flash mean ms | SDPA mean ms | SDPA p50/p99 | flash/SDPA time | flash MB | SDPA MB "
        "| flash vs SDPA err |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in out_rows:
        kv = f"/{r['kv_heads']}" if r["kv_heads"] != r["heads"] else ""
        label = f"B{r['batch']} H{r['heads']}{kv} L{r['seq']} d{r['depth']}{' causal' if r['causal'] else ''}"
        f = r["flash_mean_ms"]
        ratio = f"{f / r['sdpa_mean_ms']:.2f}" if f else ""
        fmb = f"{r['flash_peak_bytes'] / 2**20:,.1f}" if r["flash_peak_bytes"] is not None else ""
        print(
            f"| {label} | {f:.4g} | {r['sdpa_mean_ms']:.4g} | {r['sdpa_p50_ms']:.4g}/{r['sdpa_p99_ms']:.4g} "
            f"| {ratio} | {fmb} | {r['sdpa_peak_bytes'] / 2**20:,.1f} | {r['flash_vs_sdpa_rel_err']:.1e} |"
            if f
            else f"| {label} | | {r['sdpa_mean_ms']:.4g} | | | | | |"
        )
    if args.json:
        json.dump({"rows": out_rows}, open(args.json, "w"), indent=1)
    eng.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
