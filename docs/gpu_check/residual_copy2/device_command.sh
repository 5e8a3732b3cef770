#!/usr/bin/env bash
# Issue 11: the staged step's M-row and skip copies with compile-time trip counts and no division
# per chunk, and its bias loaded once per block (B, this tree) against main's kernels (A, .whl/kold
# = `git archive <main> kernels`): verify, the steps in context (Nsight Compute, --cache-control
# none, batch 1024), then like-for-like e2e rounds in A B B A order with the PyTorch peer between rounds.
#   C=<commit> bash docs/gpu_check/residual_copy2/device_command.sh
set -u
R=$OUT/r; mkdir -p $R; D=docs/gpu_check
mkdir -p /tmp/site && tar -xJf .whl/numba312.tar.xz -C /tmp/site
export PYTHONPATH=/tmp/site:$PWD/.whl/site:$PWD NUMBA_CACHE_DIR=/tmp/nbcache PYTHONUNBUFFERED=1
OLDK=$PWD/.whl/kold/kernels
L=$R/copy2.log
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u; echo "tree ${C:-?}; A = main's kernels, B = this tree's"; } >$L
f=/tmp/res-20x256.pb.gz
python3 -m lc0py make-net --preset res-20x256 -o $f >/dev/null 2>&1
echo "=== verify (B)" >>$L
for spec in "$f cuda-fp16 on" "$f cuda on" ".nets/maia-1100.pb.gz cuda-fp16 on" ".nets/meangirl-8.pb.gz cuda-fp16 on"; do
  set -- $spec
  LC0PY_KERNEL_CACHE=/tmp/kcB timeout 90 python3 -m lc0py verify -w $1 --backend $2 -o winograd_staged=$3 --batch 8 --seed 23 2>&1 | grep -E "PASS|FAIL|rror" | sed "s|^|$(basename $1) $2 staged=$3: |" >>$L
done
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__inst_executed.sum
for side in A B; do
  kd=$PWD/kernels; [ $side = A ] && kd=$OLDK
  LC0PY_KERNEL_DIR=$kd LC0PY_KERNEL_CACHE=/tmp/kc$side timeout 200 ncu --clock-control none --cache-control none --kernel-name regex:"winograd_output_fused" \
    --launch-skip 168 --launch-count 6 --metrics $M --csv python3 $D/residual_gap/ncu_ctx.py $f 1024 >$R/ncu_$side.csv 2>>$R/err
done
e2e() {
  kd=$PWD/kernels; [ $1 = A ] && kd=$OLDK
  LC0PY_KERNEL_DIR=$kd LC0PY_KERNEL_CACHE=/tmp/kc$1 timeout 90 python3 $D/residual_h100b/e2e.py $f 256,1024 | sed "s|^{|{\"side\": \"$1\", |" >>$L
}
for r in 1 2 3; do
  e2e A; e2e B; e2e B; e2e A
  [ $r -lt 3 ] && timeout 120 python3 scripts/compare/peer_torch.py --weights $f --sizes 256,1024 2>>$R/peer.err | sed 's|^{|{"side": "peer", |' >>$L
done
python3 - $L >>$L <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{") and '"batch"' in l]
for b in (256, 1024):
    med = {s: statistics.median([r["nps"] for r in rows if r["side"] == s and r["batch"] == b]) for s in ("A", "B", "peer")}
    print("res-20x256", b, {k: round(v) for k, v in med.items()}, "B/A", round(med["B"] / med["A"], 3), "B/peer", round(med["B"] / med["peer"], 3), "A/peer", round(med["A"] / med["peer"], 3))
PY
date -u >>$L
