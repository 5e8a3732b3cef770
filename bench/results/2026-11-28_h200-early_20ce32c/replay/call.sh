#!/usr/bin/env bash
# smolgen_early: device time of the captured pass (graph replays between events), on / off alternated
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/g; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C (working tree of the call)"; nproc; } > $O/info.txt 2>&1
cp .dev/call06.sh $O/call.sh
timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1; el make-net
timeout 200 python3 scripts/bench/graph_replay.py --weights /tmp/t82.pb.gz --variants "smolgen_early=off;smolgen_early=on" --sizes 1,2,3,4,8 --rounds 8 --replays 300 --json $O/replay_t82.jsonl > $O/replay_t82.txt 2>&1; echo "replay rc $?" >> $O/info.txt; el replay
timeout 120 python3 scripts/bench/graph_replay.py --weights /tmp/t82.pb.gz --variants "smolgen_early=off,pdl=off;smolgen_early=on,pdl=off" --sizes 1,2 --rounds 6 --replays 300 --json $O/replay_t82_nopdl.jsonl > $O/replay_t82_nopdl.txt 2>&1; echo "replay nopdl rc $?" >> $O/info.txt; el replay2
cat $O/replay_t82.txt $O/replay_t82_nopdl.txt
cd $OUT && tar czf g.tgz g && rm -rf g
