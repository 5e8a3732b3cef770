#!/usr/bin/env bash
# The split fused Winograd step (backend option winograd_split) on a GPU: not yet run (the
# 2026-11-26 session's device time was spent on the measurements it was built from).
# Run from the repository root on the device machine, carrying .whl (numba312.tar.xz; site/: chess,
# platformdirs) and .nets (maia-1100, meangirl-8):  C=<commit> bash docs/gpu_check/residual_split/device_command.sh
# Writes $OUT/r/split.log: registers, GPU residual tests, verify off/on, Nsight Compute of both
# kernels, same-run backendbench A/B winograd_split=off (A) vs on (B), 3 rounds, and the PyTorch peer.
set -u
R=$OUT/r; mkdir -p $R
( while sleep 20; do tar -czf $OUT/partial.tgz -C $OUT r 2>/dev/null; done ) &
mkdir -p /tmp/site && tar -xJf .whl/numba312.tar.xz -C /tmp/site
export PYTHONPATH=/tmp/site:$PWD/.whl/site:$PWD NUMBA_CACHE_DIR=/tmp/nbcache PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/kc
L=$R/split.log
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; echo "tree ${C:-?}; A = winograd_split=off, B = on"; } >$L
f=/tmp/res-20x256.pb.gz
python3 -m lc0py make-net --preset res-20x256 -o $f >>$L 2>&1
echo "=== GPU residual tests" >>$L
timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/backends/gpu/test_gpu_residual.py 2>&1 | tail -3 >>$L
echo "=== verify" >>$L
for net in $f .nets/maia-1100.pb.gz .nets/meangirl-8.pb.gz; do for b in cuda-fp16 cuda; do for sp in off on; do
  timeout 60 python3 -m lc0py verify -w $net --backend $b -o winograd=on,winograd_split=$sp --batch 8 --seed 19 2>&1 | grep -E "PASS|FAIL|rror" | sed "s|^|$(basename $net) $b split=$sp: |" >>$L
done; done; done
for sp in off on; do
  echo "=== ncu winograd_split=$sp" >>$L
  timeout 100 ncu --clock-control none --kernel-name regex:winograd_output_fused --launch-skip 84 --launch-count 1 \
    --section SpeedOfLight --section InstructionStats --section SchedulerStats --section Occupancy --section LaunchStats \
    python3 -m lc0py backendbench -w $f -b cuda-fp16 -o max_batch=1024,graphs=off,winograd_split=$sp --batch-sizes 1024 --batches 4 2>&1 \
    | grep -E "winograd_output|Duration|Executed Instructions  |Issued Warp|Eligible Warps|Registers Per|Achieved Active|Compute \(SM\)|Memory Throughput" >>$L
done
for r in 1 2 3; do for side in A B; do
  sp=off; [ $side = B ] && sp=on
  timeout 100 python3 -m lc0py backendbench -w $f -b cuda-fp16 -o max_batch=1024,winograd_split=$sp --batch-sizes 64,256,1024 --batches 30 --json 2>>$R/bb.err \
    | sed "s|^{|{\"side\": \"$side\", \"round\": $r, |" >>$R/ab.jsonl
done; done
echo "=== peer" >>$L
timeout 150 python3 scripts/compare/peer_torch.py --weights $f --sizes 64,256,1024 >$R/peer.jsonl 2>>$R/peer.err; cat $R/peer.jsonl >>$L
python3 - $R/ab.jsonl $R/peer.jsonl >>$L <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
peer = {d["batch"]: d["nps"] for d in (json.loads(l) for l in open(sys.argv[2]) if l.startswith("{")) if "batch" in d}
for size in sorted({r["size"] for r in rows}):
    med = {s: statistics.median([r["nps"] for r in rows if r["size"] == size and r["side"] == s]) for s in ("A", "B")}
    p = peer.get(size)
    print("res-20x256", size, {k: round(v) for k, v in med.items()}, "B/A", round(med["B"] / med["A"], 3),
          "peer", round(p) if p else None, "B/peer", round(med["B"] / p, 3) if p else None)
PY
date -u >>$L
kill %1 2>/dev/null; rm -f $OUT/partial.tgz
