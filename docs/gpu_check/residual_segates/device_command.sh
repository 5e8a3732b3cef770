#!/usr/bin/env bash
# Issue 11: the SE outside the fused step (backend option se_gates): verify on and off with the staged
# and split kernels, the two real SE nets, then like-for-like e2e of res-20x256, se_gates on against
# off (this tree's defaults otherwise), alternating, 2 rounds, and the steps in context.
#   C=<commit> bash docs/gpu_check/residual_segates/device_command.sh
set -u
R=$OUT/r; mkdir -p $R; D=docs/gpu_check
mkdir -p /tmp/site && tar -xJf .whl/numba312.tar.xz -C /tmp/site
export PYTHONPATH=/tmp/site:$PWD/.whl/site:$PWD NUMBA_CACHE_DIR=/tmp/nbcache PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/kcB
L=$R/segates.log
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u; echo "tree ${C:-?}"; } >$L
f=/tmp/res-20x256.pb.gz
python3 -m lc0py make-net --preset res-20x256 -o $f >/dev/null 2>&1
echo "=== verify" >>$L
for spec in "$f cuda-fp16 se_gates=on,winograd_staged=on" "$f cuda-fp16 se_gates=on,winograd_staged=off" "$f cuda se_gates=on" \
            ".nets/maia-1100.pb.gz cuda-fp16 se_gates=on" ".nets/meangirl-8.pb.gz cuda-fp16 se_gates=on" "$f cuda-fp16 se_gates=off"; do
  set -- $spec
  timeout 60 python3 -m lc0py verify -w $1 --backend $2 -o $3 --batch 8 --seed 23 2>&1 | grep -E "PASS|FAIL|rror" | sed "s|^|$(basename $1) $2 $3: |" >>$L
done
for r in 1 2; do
  timeout 60 python3 $D/residual_h100b/e2e.py $f 256,1024 | sed 's|^{|{"side": "off", |' >>$L
  timeout 60 python3 $D/residual_h100b/e2e.py $f 256,1024 se_gates=on | sed 's|^{|{"side": "on", |' >>$L
done
python3 - $L >>$L <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{") and '"batch"' in l]
for b in (256, 1024):
    med = {s: statistics.median([r["nps"] for r in rows if r["side"] == s and r["batch"] == b]) for s in ("off", "on")}
    print("res-20x256", b, {k: round(v) for k, v in med.items()}, "on/off", round(med["on"] / med["off"], 3))
PY
timeout 100 ncu --clock-control none --cache-control none --kernel-name regex:"winograd_output_fused|se_gates|gemm|nvjet" --launch-skip 300 --launch-count 10 \
  --metrics gpu__time_duration.sum,sm__inst_executed.sum --csv python3 $D/residual_gap/ncu_ctx.py $f 1024 se_gates=on >$R/ncu_on.csv 2>>$R/err
date -u >>$L
