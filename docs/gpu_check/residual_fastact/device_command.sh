#!/usr/bin/env bash
# Fast activations + split-kernel fixes (fc2 over the four tile threads, no local memory) on a GPU:
# tests, verify, instruction counts, same-run A/B against main's kernels, the host's wait for a
# batch (poll vs a blocking synchronize), and whether the binding's synchronize releases the GIL.
# Carry .whl (numba312.tar.xz; site/; kernels_main/ = `git archive <main> kernels`) and .nets.
#   C=<commit> bash docs/gpu_check/residual_fastact/device_command.sh
set -u
R=$OUT/r; mkdir -p $R
( while sleep 20; do tar -czf $OUT/partial.tgz -C $OUT r 2>/dev/null; done ) &
mkdir -p /tmp/site && tar -xJf .whl/numba312.tar.xz -C /tmp/site
export PYTHONPATH=/tmp/site:$PWD/.whl/site:$PWD NUMBA_CACHE_DIR=/tmp/nbcache PYTHONUNBUFFERED=1
OLDK=$PWD/.whl/kernels_main/kernels
L=$R/fast.log
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; echo "tree ${C:-?}; A = main's kernels ($OLDK), B = this tree's"; } >$L
f=/tmp/res-20x256.pb.gz; t=/tmp/t78.pb.gz
python3 -m lc0py make-net --preset res-20x256 -o $f >/dev/null 2>&1
python3 -m lc0py make-net --preset t78 -o $t >/dev/null 2>&1
echo "=== GPU residual tests" >>$L
LC0PY_KERNEL_CACHE=/tmp/kcB timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/backends/gpu/test_gpu_residual.py 2>&1 | tail -3 >>$L
echo "=== verify (B)" >>$L
export LC0PY_KERNEL_CACHE=/tmp/kcB
for spec in "$f cuda-fp16 on" "$f cuda on" "$f cuda-fp16 off" "$f cuda off" ".nets/maia-1100.pb.gz cuda-fp16 on" ".nets/maia-1100.pb.gz cuda on" \
            ".nets/meangirl-8.pb.gz cuda-fp16 on" ".nets/meangirl-8.pb.gz cuda on" "$t cuda-fp16 on" "$t cuda on"; do
  set -- $spec
  timeout 90 python3 -m lc0py verify -w $1 --backend $2 -o winograd=on,winograd_split=$3 --batch 8 --seed 23 2>&1 | grep -E "PASS|FAIL|rror" | sed "s|^|$(basename $1) $2 split=$3: |" >>$L
done
for skip in 84 85; do
  echo "=== ncu split kernel (B), launch $skip" >>$L
  timeout 100 ncu --clock-control none --kernel-name regex:winograd_output_fused_split --launch-skip $skip --launch-count 1 \
    --section SpeedOfLight --section InstructionStats --section SchedulerStats --section Occupancy --section LaunchStats \
    python3 -m lc0py backendbench -w $f -b cuda-fp16 -o max_batch=1024,graphs=off,winograd_split=on --batch-sizes 1024 --batches 4 2>&1 \
    | grep -E "Duration|Executed Instructions  |Issued Warp|Eligible Warps|Registers Per|Achieved Active|Compute \(SM\)|Memory Throughput|Local" >>$L
done
bb() {  # side net opts sizes batches rounds-tag [wait]
  local side=$1 net=$2 opts=$3 sizes=$4 n=$5 tag=$6
  local kd=$PWD/kernels kc=/tmp/kcB
  [ $side = A ] && kd=$OLDK && kc=/tmp/kcA
  LC0PY_KERNEL_DIR=$kd LC0PY_KERNEL_CACHE=$kc timeout 150 python3 -m lc0py backendbench -w $net -b cuda-fp16 -o $opts --batch-sizes $sizes --batches $n --json 2>>$R/bb.err \
    | sed "s|^{|{\"side\": \"$side\", \"tag\": \"$tag\", |" >>$R/ab.jsonl
}
for r in 1 2 3; do bb A $f max_batch=1024,winograd_split=on 64,256,1024 30 res; bb B $f max_batch=1024,winograd_split=on 64,256,1024 30 res; done
for r in 1 2; do bb A $t max_batch=1024 64,256,1024 15 t78; bb B $t max_batch=1024 64,256,1024 15 t78; done
echo "=== GIL during cuEventSynchronize" >>$L
timeout 60 python3 docs/gpu_check/residual_fastact/gil_wait.py $f >>$L 2>&1
echo "=== host wait: poll (P, main's) vs blocking synchronize (S), B kernels" >>$L
for r in 1 2; do
  bb B $f max_batch=1024,winograd_split=on 64,256,1024 30 waitP
  LC0PY_KERNEL_CACHE=/tmp/kcB timeout 150 python3 -c "
import sys, lc0py.backends.gpu.runner as r
r.wait_without_gil = lambda e: e.synchronize()
from lc0py.cli.main import main
sys.exit(main(sys.argv[1:]))" backendbench -w $f -b cuda-fp16 -o max_batch=1024,winograd_split=on --batch-sizes 64,256,1024 --batches 30 --json 2>>$R/bb.err \
    | sed 's|^{|{"side": "B", "tag": "waitS", |' >>$R/ab.jsonl
done
echo "=== peer" >>$L
timeout 120 python3 scripts/compare/peer_torch.py --weights $f --sizes 64,256,1024 >$R/peer.jsonl 2>>$R/peer.err; cat $R/peer.jsonl >>$L
python3 - $R/ab.jsonl $R/peer.jsonl >>$L <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
peer = {d["batch"]: d["nps"] for d in (json.loads(l) for l in open(sys.argv[2]) if l.startswith("{")) if "batch" in d}
for tag in ("res", "t78", "waitP", "waitS"):
    for size in sorted({r["size"] for r in rows if r["tag"] == tag}):
        med = {s: statistics.median([r["nps"] for r in rows if r["size"] == size and r["side"] == s and r["tag"] == tag] or [0]) for s in ("A", "B")}
        p = peer.get(size) if tag != "t78" else None
        print(tag, size, {k: round(v) for k, v in med.items()}, "B/A", round(med["B"] / med["A"], 3) if med["A"] else None,
              "peer", round(p) if p else None, "B/peer", round(med["B"] / p, 3) if p else None)
PY
date -u >>$L
kill %1 2>/dev/null; rm -f $OUT/partial.tgz
