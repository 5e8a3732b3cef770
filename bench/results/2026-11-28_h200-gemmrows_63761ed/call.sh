#!/usr/bin/env bash
# stop 21, call 8: gemm_rows (the small batches' GEMMs as one kernel of ours, dependent-launched,
# FFN1's bias + relu^2 in its epilogue): GPU tests, verify, CUPTI at batch 1, backendbench on/off
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/g; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C"; nproc; } > $O/info.txt 2>&1
cp .dev/call49.sh $O/call.sh
timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1; el make-net
timeout 100 python3 -m pytest -m gpu -q -p no:cacheprovider tests/backends/gpu/test_gpu_gemm_rows.py > $O/gpu_gemm_rows_tests.log 2>&1
echo "gemm_rows gpu tests rc $?" >> $O/info.txt; tail -1 $O/gpu_gemm_rows_tests.log >> $O/info.txt; el tests1
timeout 60 python3 -m lc0py verify -w /tmp/t82.pb.gz -b cuda-fp16 -o gemm_rows=on > $O/verify_t82_on.txt 2>&1; echo "verify t82 gemm_rows=on rc $?" >> $O/info.txt
for v in off on; do timeout 60 python3 scripts/bench/gpu_kernel_profile.py --weights /tmp/t82.pb.gz --backend-opts gemm_rows=$v --batch 1 --top 30 > $O/profile_b1_$v.txt 2>&1; done; el profiles
for r in 1 2 3 4; do
  if [ $((r % 2)) = 1 ]; then order="off on"; else order="on off"; fi
  for v in $order; do
    timeout 60 python3 -m lc0py backendbench -w /tmp/t82.pb.gz -b cuda-fp16 -o gemm_rows=$v --batch-sizes 1,2,4,8,16 --batches 150 --json > $O/bb_t82_${v}_$r.jsonl 2>>$O/bb.err
  done
  el round $r
done
python3 /dev/stdin $O > $O/table.txt 2>&1 <<'PY'
import json,glob,collections,statistics,sys,os
d=collections.defaultdict(lambda: collections.defaultdict(list))
for f in glob.glob(os.path.join(sys.argv[1],"bb_*.jsonl")):
    v=os.path.basename(f)[:-6].split("_")[2]
    for line in open(f):
        try: o=json.loads(line)
        except Exception: continue
        d[o["size"]][v].append(o["median_nps"])
print("gemm_rows on / off (on: batches to 8 positions), median nps of each run's 150 batches")
for b in sorted(d):
    o=d[b]["off"]; n=d[b]["on"]
    if o and n:
        print(f"{b:5d} off {statistics.median(o):9.0f} on {statistics.median(n):9.0f}  x{statistics.median(n)/statistics.median(o):.3f}  rounds " + " ".join(f"{b2/a2:.3f}" for a2,b2 in zip(o,n)))
PY
timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider tests/backends/gpu/test_gpu_fusions.py -k "gemm_rows or defaults" > $O/gpu_fusion_tests.log 2>&1
echo "fusion gpu tests rc $?" >> $O/info.txt; tail -1 $O/gpu_fusion_tests.log >> $O/info.txt; el tests2
cd $OUT && tar czf g.tgz g && rm -rf g
