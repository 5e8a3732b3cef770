#!/usr/bin/env bash
# the final tree: every GPU test, verify, graph replays (defaults vs smolgen_early=off), backendbench A/B
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/g; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C (working tree of the call)"; nproc; } > $O/info.txt 2>&1
cp .dev/call09.sh $O/call.sh
timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1; el make-net
timeout 150 python3 scripts/bench/graph_replay.py --weights /tmp/t82.pb.gz --variants "smolgen_early=off;" --sizes 1,2,3,4,8 --rounds 6 --replays 300 --json $O/replay_final.jsonl > $O/replay_final.txt 2>&1; echo "replay rc $?" >> $O/info.txt; el replay
for r in 1 2 3 4; do
  if [ $((r % 2)) = 1 ]; then order="off default"; else order="default off"; fi
  for v in $order; do
    o=""; [ $v = off ] && o="-o smolgen_early=off"
    timeout 60 python3 -m lc0py backendbench -w /tmp/t82.pb.gz -b cuda-fp16 $o --batch-sizes 1,2,3,4 --batches 300 --json > $O/bb_t82_${v}_$r.jsonl 2>>$O/bb.err
  done
done; el bb
for p in cuda-fp16 cuda; do timeout 60 python3 -m lc0py verify -w /tmp/t82.pb.gz -b $p > $O/verify_t82_$p.txt 2>&1; echo "verify t82 $p rc $?" >> $O/info.txt; done; el verify
timeout 420 python3 -m pytest -m gpu -q -p no:cacheprovider tests/ > $O/gpu_tests.log 2>&1
echo "gpu tests rc $?" >> $O/info.txt; tail -1 $O/gpu_tests.log >> $O/info.txt; el tests
python3 /dev/stdin $O > $O/table.txt 2>&1 <<'PY'
import json,glob,collections,statistics,sys,os
d=collections.defaultdict(lambda: collections.defaultdict(list))
for f in glob.glob(os.path.join(sys.argv[1],"bb_*.jsonl")):
    v=os.path.basename(f)[:-6].split("_")[2]
    for line in open(f):
        try: o=json.loads(line)
        except Exception: continue
        d[o["size"]][v].append(o["median_nps"])
print("backendbench, defaults / smolgen_early=off, median nps of each run's 300 batches (ms a batch)")
for b in sorted(d):
    o=d[b]["off"]; n=d[b]["default"]
    if o and n:
        mo, mn = statistics.median(o), statistics.median(n)
        print(f"{b:5d} off {mo:9.0f} ({1000*b/mo:.3f} ms) default {mn:9.0f} ({1000*b/mn:.3f} ms)  x{mn/mo:.3f}  rounds " + " ".join(f"{b2/a2:.3f}" for a2,b2 in zip(o,n)))
PY
cat $O/replay_final.txt $O/table.txt $O/info.txt
cd $OUT && tar czf g.tgz g && rm -rf g
