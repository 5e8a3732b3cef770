#!/usr/bin/env bash
# Issue 11, eleventh stop: room for the SE branch. cuBLAS's Hopper GEMM of the second convolution
# is persistent (grid = 132 blocks, one a multiprocessor: residual_gap/r/ncu_1024.csv), so the SE
# branch on the side stream (folded fc1 GEMM, its split-K reduce, se_gates) waits for its end.
# branch_sms.py: forward graph device time at 256/512/1024 for SE_BRANCH_SMS 0 (all SMs to the GEMM)
# .. 24, se_gates auto and on. Then e2e + the peer for the tree's default.
#   C=<commit> bash docs/gpu_check/residual_branch/device_command.sh
set -u
R=$OUT/r; mkdir -p $R; D=docs/gpu_check
mkdir -p /tmp/site && tar -xJf .whl/numba312.tar.xz -C /tmp/site
export NUMBA_CACHE_DIR=/tmp/nbcache PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/kc PYTHONPATH=/tmp/site:$PWD/.whl/site:$PWD
L=$R/branch.log
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u; echo "tree ${C:-?}"; } >$L
f=/tmp/res-20x256.pb.gz
python3 -m lc0py make-net --preset res-20x256 -o $f >/dev/null 2>&1
timeout 330 python3 $D/residual_branch/branch_sms.py $f 0,4,8,16,24 >>$L 2>>$R/err
for r in 1 2; do timeout 60 python3 $D/residual_h100b/e2e.py $f 64,256,1024 >>$L 2>>$R/err; done
timeout 200 python3 scripts/compare/peer_torch.py --weights $f --sizes 64,256,1024 2>>$R/peer.err >>$L
python3 - $L >>$L <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith('{"round"')]
for g in ("auto", "on"):
    base = {n: statistics.median(r[f"graph_ms_{n}"] for r in rows if r["se_branch_sms"] == 0 and r["se_gates"] == "auto") for n in (256, 512, 1024)}
    for sms in sorted({r["se_branch_sms"] for r in rows}):
        sel = [r for r in rows if r["se_branch_sms"] == sms and r["se_gates"] == g]
        med = {n: statistics.median(r[f"graph_ms_{n}"] for r in sel) for n in (256, 512, 1024)}
        print("se_gates", g, "sms", sms, {n: round(v, 3) for n, v in med.items()},
              "vs sms0/auto", {n: round(base[n] / v, 3) for n, v in med.items()})
PY
date -u >>$L
