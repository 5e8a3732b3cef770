#!/usr/bin/env bash
# fused step, activation hoisted: A = 7ccaf79 (.whl/oldtree), B = this tree. verify (B), ncu instruction
# counts A/B, same-run backendbench A/B (2 rounds).
set -u
R=$OUT/r; mkdir -p $R
mkdir -p /tmp/site && tar -xJf .whl/numba312.tar.xz -C /tmp/site
export NUMBA_CACHE_DIR=/tmp/nbcache PYTHONUNBUFFERED=1
PB=/tmp/site:$PWD/.whl/site:$PWD; PA=/tmp/site:$PWD/.whl/site:$PWD/.whl/oldtree
L=$R/act.log
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; echo "A = 7ccaf79 (.whl/oldtree), B = ${C:-?}"; } >$L
f=/tmp/res-20x256.pb.gz
PYTHONPATH=$PB python3 -m lc0py make-net --preset res-20x256 -o $f >>$L 2>&1
echo "=== verify (B)" >>$L
for net in $f .nets/maia-1100.pb.gz .nets/meangirl-8.pb.gz; do for b in cuda-fp16 cuda; do
  PYTHONPATH=$PB LC0PY_KERNEL_CACHE=/tmp/kB timeout 60 python3 -m lc0py verify -w $net --backend $b -o winograd=on --batch 8 --seed 13 2>&1 | grep -E "PASS|FAIL|rror" | sed "s|^|$(basename $net) $b: |" >>$L
done; done
for side in A B; do
  P=$PB; [ $side = A ] && P=$PA
  echo "=== ncu $side" >>$L
  PYTHONPATH=$P LC0PY_KERNEL_CACHE=/tmp/k$side timeout 100 ncu --clock-control none --kernel-name regex:winograd_output_fused --launch-skip 84 --launch-count 1 \
    --section SpeedOfLight --section InstructionStats --section SchedulerStats --section LaunchStats \
    python3 -m lc0py backendbench -w $f -b cuda-fp16 -o max_batch=1024,graphs=off --batch-sizes 1024 --batches 4 2>&1 \
    | grep -E "Duration|Executed Instructions  |Issued Warp|Registers Per|Compute \(SM\)|Memory Throughput" >>$L
done
date -u >>$L
for r in 1 2; do for side in A B; do
  P=$PB; [ $side = A ] && P=$PA
  PYTHONPATH=$P LC0PY_KERNEL_CACHE=/tmp/k$side timeout 100 python3 -m lc0py backendbench -w $f -b cuda-fp16 -o max_batch=1024 --batch-sizes 64,256,1024 --batches 30 --json 2>>$R/bb.err \
    | sed "s|^{|{\"side\": \"$side\", \"round\": $r, |" >>$R/ab.jsonl
done; done
python3 - $R/ab.jsonl >>$L <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
for size in sorted({r["size"] for r in rows}):
    med = {s: statistics.median([r["nps"] for r in rows if r["size"] == size and r["side"] == s]) for s in ("A", "B")}
    print("res-20x256", size, {k: round(v) for k, v in med.items()}, "B/A", round(med["B"] / med["A"], 3))
PY
date -u >>$L
