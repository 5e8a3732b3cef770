#!/usr/bin/env bash
# stop 21, call 3: dense_rows loads its weights before the dependent-launch wait; old = 6ce8e6b
# (the wait first), backendbench T82 at 1 position (where smolgen_rows runs), 6 alternating rounds;
# the fusion GPU tests and verify on the new tree
set -u
ROOT=$PWD
export PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
NEWP=$ROOT/.whl/site:$ROOT OLDP=$ROOT/.whl/site:$ROOT/.dev/oldpkg
O=$OUT/d; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C (old: 6ce8e6b)"; nproc; } > $O/info.txt 2>&1
cp .dev/call44.sh $O/call.sh
PYTHONPATH=$NEWP timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1; el make-net
PYTHONPATH=$NEWP timeout 90 python3 -m lc0py verify -w /tmp/t82.pb.gz -b cuda-fp16 > $O/verify_t82.txt 2>&1; echo "verify t82 rc $?" >> $O/info.txt
PYTHONPATH=$NEWP timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider tests/backends/gpu/test_gpu_fusions.py > $O/gpu_fusion_tests.log 2>&1
echo "fusion gpu tests rc $?" >> $O/info.txt; tail -1 $O/gpu_fusion_tests.log >> $O/info.txt; el tests
for r in 1 2 3 4 5 6; do
  if [ $((r % 2)) = 1 ]; then order="old new"; else order="new old"; fi
  for v in $order; do
    if [ $v = new ]; then P=$NEWP; else P=$OLDP; fi
    (cd /tmp && PYTHONPATH=$P timeout 60 python3 -m lc0py backendbench -w /tmp/t82.pb.gz -b cuda-fp16 --batch-sizes 1,2 --batches 300 --json > $O/bb_t82_${v}_$r.jsonl 2>>$O/bb.err)
  done
done; el backendbench
python3 /dev/stdin $O > $O/table.txt 2>&1 <<'PY'
import json,glob,collections,statistics,sys,os
d=collections.defaultdict(lambda: collections.defaultdict(list))
for f in glob.glob(os.path.join(sys.argv[1],"bb_*.jsonl")):
    net,v=os.path.basename(f)[:-6].split("_")[1:3]
    for line in open(f):
        try: o=json.loads(line)
        except Exception: continue
        d[(net,o["size"])][v].append(o["median_nps"])
print("old = 6ce8e6b, new = dense_rows weights before the wait; median nps of each run's batches")
for (net,b) in sorted(d):
    o=d[(net,b)]["old"]; n=d[(net,b)]["new"]
    if not o or not n: continue
    print(f"{net:5s} {b:5d} old {statistics.median(o):9.0f} new {statistics.median(n):9.0f}  x{statistics.median(n)/statistics.median(o):.3f}  rounds " + " ".join(f"{b2/a2:.3f}" for a2,b2 in zip(o,n)))
PY
cd $OUT && tar czf d.tgz d && rm -rf d
