#!/usr/bin/env bash
# graph replays: pdl on/off per batch size; smolgen_early default vs off; backendbench batch 1 default
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/g; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C (working tree of the call)"; nproc; } > $O/info.txt 2>&1
cp .dev/call07.sh $O/call.sh
timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1; el make-net
timeout 200 python3 scripts/bench/graph_replay.py --weights /tmp/t82.pb.gz --variants "smolgen_early=off;" --sizes 1,2,3,4 --rounds 6 --replays 300 --json $O/replay_early_default.jsonl > $O/replay_early_default.txt 2>&1; echo "replay early rc $?" >> $O/info.txt; el replay1
timeout 250 python3 scripts/bench/graph_replay.py --weights /tmp/t82.pb.gz --variants "pdl=off;pdl=on" --sizes 1,2,3,4,8,16,32,64 --rounds 6 --replays 200 --json $O/replay_pdl.jsonl > $O/replay_pdl.txt 2>&1; echo "replay pdl rc $?" >> $O/info.txt; el replay2
for r in 1 2 3; do timeout 60 python3 -m lc0py backendbench -w /tmp/t82.pb.gz -b cuda-fp16 --batch-sizes 1,2,3 --batches 300 --json > $O/bb_t82_default_$r.jsonl 2>>$O/bb.err; done; el bb
cat $O/replay_early_default.txt $O/replay_pdl.txt; cat $O/bb_t82_default_*.jsonl | python3 -c "
import sys,json
for l in sys.stdin:
    o=json.loads(l); print(o['size'], round(o['median_nps']), round(1000*o['size']/o['median_nps'],4), 'ms')"
cd $OUT && tar czf g.tgz g && rm -rf g
