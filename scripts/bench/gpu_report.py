#!/usr/bin/env python3
"""Turn scripts/device/gpu_check's outputs (a folder) into the markdown table of docs/performance.md."""

from __future__ import annotations

import json
import sys
from pathlib import Path

TARGETS = {64: 30000, 256: 40000, 1024: 45000}
PEERS_H100 = {
    "lc0 cuda-fp16": {64: 18800, 256: 26300, 1024: 30500},
    "PyTorch compile+graph+SDPA": {64: 27600, 256: 33200, 1024: 36100},
}


def jsonl(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.startswith("{")]


def main() -> int:
    out = Path(sys.argv[1])
    bb = {r["size"]: r for r in jsonl(out / "backendbench.jsonl")}
    fb = {r["size"]: r for r in jsonl(out / "backendbench_fallback.jsonl")}
    peer = {r["batch"]: r for r in jsonl(out / "peer_torch.jsonl") if "batch" in r}
    peer_chk = [r for r in jsonl(out / "peer_torch.jsonl") if "check_policy_rel_err" in r]
    gb = (
        json.loads((out / "gpu_bench.json").read_text())
        if (out / "gpu_bench.json").is_file()
        else {"rows": []}
    )
    rows = {r["batch"]: r for r in gb["rows"]}
    ceiling = gb.get("ceiling_tflops")
    fpp = gb.get("flops_per_position")
    print(
        f"Device: {gb.get('device', '?')} ({gb.get('arch', '?')}); "
        "fp16 GEMM ceiling (cuBLAS 8192^3, same binding): "
        f"{ceiling:.0f} TFLOP/s; T82 = {fpp / 1e9:.2f} GFLOP/position"
        if ceiling and fpp
        else "gpu_bench missing"
    )
    print()
    print(
        "| batch | backendbench nps (mean) | backendbench median | gpu_bench nps (median) "
        "| TFLOP/s | of ceiling "
        "| fallback nps | flash/fallback | PyTorch peer nps | target |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size in sorted(set(bb) | set(rows)):
        b, r = bb.get(size, {}), rows.get(size, {})
        nps = b.get("nps")
        tf = fpp * nps / 1e12 if (fpp and nps) else None
        f = fb.get(size, {}).get("nps")
        cells = [
            str(size),
            f"{nps:.0f}" if nps else "",
            f"{b['median_nps']:.0f}" if b else "",
            f"{r['nps']:.0f}" if r else "",
            f"{tf:.0f}" if tf else "",
            f"{100 * tf / ceiling:.1f}%" if (tf and ceiling) else "",
            f"{f:.0f}" if f else "",
            f"{nps / f:.2f}x" if (f and nps) else "",
            f"{peer[size]['nps']:.0f}" if size in peer else "",
            f"{TARGETS[size]}" if size in TARGETS else "",
        ]
        print("| " + " | ".join(cells) + " |")
    print()
    att = [r for r in gb["rows"] if "attn_flash_ms" in r]
    if att:
        print(
            "Attention of one layer alone (device events, median of 50): flash kernel vs fallback "
            "(bias kernel + 2x per-head strided-batched GEMMs + softmax_bias kernel)."
        )
        print()
        print("| batch | flash ms | fallback ms | ratio | e2e flash/fallback (gpu_bench) |")
        print("|---:|---:|---:|---:|---:|")
        for r in att:
            print(
                f"| {r['batch']} | {r['attn_flash_ms']:.4f} | {r['attn_fallback_ms']:.4f} "
                f"| {r['attn_speedup']:.1f}x "
                f"| {r['flash_speedup']:.2f}x |"
            )
        print()
    if peer_chk:
        print(
            f"PyTorch peer ({peer_chk[0].get('torch')}) policy vs lc0py float64 reference: relative error "
            f"{peer_chk[0]['check_policy_rel_err']:.2e}."
        )
    print(
        "Peers measured earlier on an H100 (from the issue): "
        + "; ".join(
            f"{k}: " + "/".join(f"{v[s] / 1000:.1f}k" for s in (64, 256, 1024)) for k, v in PEERS_H100.items()
        )
        + " at 64/256/1024."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
