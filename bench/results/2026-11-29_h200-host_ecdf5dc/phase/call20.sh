#!/usr/bin/env bash
# is the batch-1 graph's speed a phase of the block scheduler? a 1..264-block no-op kernel between measurements
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/f; mkdir -p $O
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C"; } > $O/info.txt 2>&1
cp .dev/call20.sh .dev/phase.py $O/
[ -f /tmp/t82.pb.gz ] || timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1
timeout 200 python3 .dev/phase.py /tmp/t82.pb.gz > $O/t82.txt 2>&1
cat $O/t82.txt
cd $OUT && tar czf f.tgz f && rm -rf f
