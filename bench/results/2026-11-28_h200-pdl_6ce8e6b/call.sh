#!/usr/bin/env bash
# stop 21, call 1: programmatic dependent launch (pdl=on, the new default) against pdl=off, same
# tree, 4 alternating rounds of backendbench; verify on three nets with it on
set -u
ROOT=$PWD
export PYTHONPATH=$ROOT/.whl/site:$ROOT PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/p; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C"; nproc; } > $O/info.txt 2>&1
cp .dev/call42.sh $O/call.sh
timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1; el make-net
timeout 60 python3 - >> $O/info.txt 2>&1 <<'PY'
from lc0py.gpu.cuda_platform import CudaPlatform
p = CudaPlatform(0)
print("driver", p._drv.cuDriverGetVersion(), "problem", p.dependent_launch_problem())
PY
for w in /tmp/t82.pb.gz .nets/maia-1900.pb.gz .nets/meangirl-8.pb.gz; do
  timeout 90 python3 -m lc0py verify -w $w -b cuda-fp16 > $O/verify_$(basename $w .pb.gz).txt 2>&1; echo "verify $w rc $?" >> $O/info.txt
done
timeout 90 python3 -m lc0py verify -w /tmp/t82.pb.gz -b cuda > $O/verify_t82_fp32.txt 2>&1; echo "verify t82 fp32 rc $?" >> $O/info.txt; el verify
M=$ROOT/.nets/maia-1900.pb.gz
for r in 1 2 3 4; do
  if [ $((r % 2)) = 1 ]; then order="old new"; else order="new old"; fi
  for v in $order; do
    if [ $v = new ]; then opt=pdl=on; else opt=pdl=off; fi
    (cd /tmp && timeout 90 python3 -m lc0py backendbench -w /tmp/t82.pb.gz -b cuda-fp16 -o $opt --batch-sizes 1,2,4,8,16,32,64,256 --batches 150 --json > $O/bb_t82_${v}_$r.jsonl 2>>$O/bb.err)
    (cd /tmp && timeout 60 python3 -m lc0py backendbench -w $M -b cuda-fp16 -o $opt --batch-sizes 1,16,64,256 --batches 150 --json > $O/bb_maia_${v}_$r.jsonl 2>>$O/bb.err)
  done
  el round $r
done
python3 /dev/stdin $O > $O/table.txt 2>&1 <<'PY'
import json,glob,collections,statistics,sys,os
d=collections.defaultdict(lambda: collections.defaultdict(list))
for f in glob.glob(os.path.join(sys.argv[1],"bb_*.jsonl")):
    net,v=os.path.basename(f)[:-6].split("_")[1:3]
    for line in open(f):
        try: o=json.loads(line)
        except Exception: continue
        d[(net,o["size"])][v].append(o["median_nps"])
print("old = pdl=off, new = pdl=on; median nps of each run's 150 batches")
for (net,b) in sorted(d):
    o=d[(net,b)]["old"]; n=d[(net,b)]["new"]
    if not o or not n: continue
    print(f"{net:5s} {b:5d} off {statistics.median(o):9.0f} on {statistics.median(n):9.0f}  x{statistics.median(n)/statistics.median(o):.3f}  rounds " + " ".join(f"{b2/a2:.3f}" for a2,b2 in zip(o,n)))
PY
cd $OUT && tar czf p.tgz p && rm -rf p
