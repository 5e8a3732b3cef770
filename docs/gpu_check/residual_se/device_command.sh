#!/usr/bin/env bash
# Issue 11, a measured dead end: the split SE step's weights loaded ahead of the barriers they waited
# behind (se_preload.patch against fd71e7d's kernels, plus a `lc0_launder` helper in both preludes:
# an empty asm that keeps ptxas from hoisting the fc2 loads above the pooling barrier). GPU tests,
# verify (staged kernel forced on), the steps in context (Nsight Compute, --cache-control none) for
# main's kernels (A, .whl/kold = `git archive <main> kernels`) and the patched ones (B), like-for-like
# e2e A/B in alternating rounds with the PyTorch peer, and fp32 backendbench A/B.
#   C=<commit> bash docs/gpu_check/residual_se/device_command.sh   (on fd71e7d with the patch applied)
set -u
R=$OUT/r; mkdir -p $R; D=docs/gpu_check
mkdir -p /tmp/site && tar -xJf .whl/numba312.tar.xz -C /tmp/site
export PYTHONPATH=/tmp/site:$PWD/.whl/site:$PWD NUMBA_CACHE_DIR=/tmp/nbcache PYTHONUNBUFFERED=1
OLDK=$PWD/.whl/kold/kernels
L=$R/se.log
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u; echo "tree ${C:-?}; A = main's kernels, B = this tree's"; } >$L
f=/tmp/res-20x256.pb.gz
python3 -m lc0py make-net --preset res-20x256 -o $f >/dev/null 2>&1
echo "=== GPU residual tests (B)" >>$L
LC0PY_KERNEL_CACHE=/tmp/kcB timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/backends/gpu/test_gpu_residual.py 2>&1 | tail -2 >>$L
echo "=== verify (B)" >>$L
for spec in "$f cuda-fp16 on" "$f cuda-fp16 off" "$f cuda off" ".nets/maia-1100.pb.gz cuda-fp16 on" ".nets/maia-1100.pb.gz cuda on" \
            ".nets/meangirl-8.pb.gz cuda-fp16 on" ".nets/meangirl-8.pb.gz cuda on"; do
  set -- $spec
  LC0PY_KERNEL_CACHE=/tmp/kcB timeout 90 python3 -m lc0py verify -w $1 --backend $2 -o winograd_staged=$3 --batch 8 --seed 23 2>&1 | grep -E "PASS|FAIL|rror" | sed "s|^|$(basename $1) $2 staged=$3: |" >>$L
done
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__inst_executed.sum
for side in A B; do
  kd=$PWD/kernels; [ $side = A ] && kd=$OLDK
  for b in 256 1024; do
    LC0PY_KERNEL_DIR=$kd LC0PY_KERNEL_CACHE=/tmp/kc$side timeout 200 ncu --clock-control none --cache-control none --kernel-name regex:"winograd_output_fused" \
      --launch-skip 168 --launch-count 6 --metrics $M --csv python3 $D/residual_gap/ncu_ctx.py $f $b >$R/ncu_${side}_$b.csv 2>>$R/err
  done
done
for r in 1 2 3; do for side in A B; do
  kd=$PWD/kernels; [ $side = A ] && kd=$OLDK
  LC0PY_KERNEL_DIR=$kd LC0PY_KERNEL_CACHE=/tmp/kc$side timeout 90 python3 $D/residual_h100b/e2e.py $f 64,256,1024 | sed "s|^{|{\"side\": \"$side\", |" >>$L
done
  [ $r -lt 3 ] && timeout 120 python3 scripts/compare/peer_torch.py --weights $f --sizes 64,256,1024 2>>$R/peer.err | sed 's|^{|{"side": "peer", |' >>$L
done
for side in A B; do
  kd=$PWD/kernels; [ $side = A ] && kd=$OLDK
  LC0PY_KERNEL_DIR=$kd LC0PY_KERNEL_CACHE=/tmp/kc$side timeout 120 python3 -m lc0py backendbench -w $f -b cuda -o max_batch=1024 --batch-sizes 256,1024 --batches 20 --json 2>>$R/err | sed "s|^{|{\"side\": \"$side\", \"fp32\": 1, |" >>$L
done
python3 - $L >>$L <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{") and '"batch"' in l]
for b in (64, 256, 1024):
    med = {s: statistics.median([r["nps"] for r in rows if r["side"] == s and r["batch"] == b]) for s in ("A", "B", "peer")}
    print("res-20x256", b, {k: round(v) for k, v in med.items()}, "B/A", round(med["B"] / med["A"], 3), "B/peer", round(med["B"] / med["peer"], 3), "A/peer", round(med["A"] / med["peer"], 3))
PY
date -u >>$L
