#!/usr/bin/env bash
# smolgen_early: GPU tests, verify, CUPTI at batch 1 on/off, backendbench on/off alternated
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/g; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $(git rev-parse HEAD 2>/dev/null)"; nproc; } > $O/info.txt 2>&1
cp .dev/call04.sh $O/call.sh
timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1; el make-net
timeout 240 python3 -m pytest -m gpu -q -p no:cacheprovider tests/backends/gpu/test_gpu_fusions.py -k "early or match_the_reference or compress or rows" > $O/gpu_fusion_tests.log 2>&1
echo "gpu fusion tests rc $?" >> $O/info.txt; tail -1 $O/gpu_fusion_tests.log >> $O/info.txt; el tests
for p in cuda-fp16 cuda; do timeout 60 python3 -m lc0py verify -w /tmp/t82.pb.gz -b $p > $O/verify_t82_$p.txt 2>&1; echo "verify t82 $p rc $?" >> $O/info.txt; done; el verify
for v in off on; do timeout 60 python3 scripts/bench/gpu_kernel_profile.py --weights /tmp/t82.pb.gz --backend-opts smolgen_early=$v --batch 1 --top 30 > $O/profile_b1_$v.txt 2>&1; done; el profiles
for r in 1 2 3 4; do
  if [ $((r % 2)) = 1 ]; then order="off on"; else order="on off"; fi
  for v in $order; do
    timeout 60 python3 -m lc0py backendbench -w /tmp/t82.pb.gz -b cuda-fp16 -o smolgen_early=$v --batch-sizes 1,2,4,8 --batches 200 --json > $O/bb_t82_${v}_$r.jsonl 2>>$O/bb.err
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
print("smolgen_early on / off, median nps of each run's 200 batches (ms a batch = size / nps)")
for b in sorted(d):
    o=d[b]["off"]; n=d[b]["on"]
    if o and n:
        mo, mn = statistics.median(o), statistics.median(n)
        print(f"{b:5d} off {mo:9.0f} ({1000*b/mo:.3f} ms) on {mn:9.0f} ({1000*b/mn:.3f} ms)  x{mn/mo:.3f}  rounds " + " ".join(f"{b2/a2:.3f}" for a2,b2 in zip(o,n)))
PY
cat $O/table.txt
cd $OUT && tar czf g.tgz g && rm -rf g
