#!/usr/bin/env bash
# smolgen_shares: GPU fusion tests, verify, graph-replay A/B (shares on/off; early+shares vs neither)
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/g; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C (working tree of the call)"; nproc; } > $O/info.txt 2>&1
cp .dev/call08.sh $O/call.sh
timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1; el make-net
timeout 150 python3 scripts/bench/graph_replay.py --weights /tmp/t82.pb.gz --variants "smolgen_shares=off;;smolgen_early=off,smolgen_shares=off" --sizes 1,2 --rounds 6 --replays 300 --json $O/replay_shares.jsonl > $O/replay_shares.txt 2>&1; echo "replay rc $?" >> $O/info.txt; el replay
cat $O/replay_shares.txt
timeout 300 python3 -m pytest -m gpu -q -p no:cacheprovider tests/backends/gpu/test_gpu_fusions.py > $O/gpu_fusion_tests.log 2>&1
echo "gpu fusion tests rc $?" >> $O/info.txt; tail -1 $O/gpu_fusion_tests.log >> $O/info.txt; el tests
for p in cuda-fp16 cuda; do timeout 60 python3 -m lc0py verify -w /tmp/t82.pb.gz -b $p > $O/verify_t82_$p.txt 2>&1; echo "verify t82 $p rc $?" >> $O/info.txt; done; el verify
cat $O/info.txt; tail -3 $O/gpu_fusion_tests.log
cd $OUT && tar czf g.tgz g && rm -rf g
