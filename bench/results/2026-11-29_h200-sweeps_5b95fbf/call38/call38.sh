#!/usr/bin/env bash
# stop 27, call 4: T82 at the search's batch sizes: gemm_tune_min and side_sms swept by graph replay (one process).
set -u
export PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c LC0PY_TUNED_DIR=/tmp/t37
R=$PWD; export PYTHONPATH=$R/.whl/site:$R
O=$OUT/sweep; mkdir -p $O; cp .dev/call37.sh $O/; START=$(date +%s); el() { echo $(( $(date +%s) - START )); }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm --format=csv,noheader; echo "tree $C"; } > $O/info.txt 2>&1
[ -f /tmp/t82.pb.gz ] || python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1
timeout 280 python3 scripts/bench/graph_replay.py --weights /tmp/t82.pb.gz --sizes 8,16,24,32,48,64,96,128 --rounds 6 \
  --variants "gemm_tune_min=4;gemm_tune_min=2;gemm_tune_min=1;gemm_tune_min=0;gemm_tune=off" --json $O/tune_min.jsonl > $O/tune_min.txt 2>&1
echo "tune_min rc $? ($(el) s)" >> $O/info.txt
timeout 250 python3 scripts/bench/graph_replay.py --weights /tmp/t82.pb.gz --sizes 72,80,96,112,128 --rounds 6 \
  --variants "smolgen_branch_max=128;smolgen_branch_max=64" --json $O/branch.jsonl > $O/branch.txt 2>&1
echo "branch rc $? ($(el) s)" >> $O/info.txt
cat $O/info.txt $O/tune_min.txt $O/branch.txt
