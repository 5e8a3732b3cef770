#!/usr/bin/env bash
# stop 21, call 7: under the dependent launch, smolgen in line (smolgen_branch=off) against on the
# side stream (the default to 128 positions), T82 backendbench, 4 alternating rounds
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/b; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C"; nproc; } > $O/info.txt 2>&1
cp .dev/call48.sh $O/call.sh
timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1; el make-net
for r in 1 2 3 4; do
  if [ $((r % 2)) = 1 ]; then order="old new"; else order="new old"; fi
  for v in $order; do
    if [ $v = new ]; then opt=smolgen_branch=off; else opt=smolgen_branch=auto; fi
    timeout 90 python3 -m lc0py backendbench -w /tmp/t82.pb.gz -b cuda-fp16 -o $opt --batch-sizes 1,2,4,8,16,32,64,128 --batches 150 --json > $O/bb_t82_${v}_$r.jsonl 2>>$O/bb.err
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
print("old = smolgen_branch=auto (side stream to 128), new = smolgen_branch=off (in line); pdl on in both")
for (net,b) in sorted(d):
    o=d[(net,b)]["old"]; n=d[(net,b)]["new"]
    if not o or not n: continue
    print(f"{net:5s} {b:5d} old {statistics.median(o):9.0f} new {statistics.median(n):9.0f}  x{statistics.median(n)/statistics.median(o):.3f}  rounds " + " ".join(f"{b2/a2:.3f}" for a2,b2 in zip(o,n)))
PY
cd $OUT && tar czf b.tgz b && rm -rf b
