#!/usr/bin/env bash
# the batch-1 graph's spread of device times over GPU states, per option set
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/s; mkdir -p $O
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C"; } > $O/info.txt 2>&1
cp .dev/call22.sh .dev/phase2.py $O/
timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1
for o in "" "pdl=off" "smolgen_branch=off" "smolgen_early=off" "smolgen_rows=off" "" "pdl=off"; do timeout 100 python3 .dev/phase2.py /tmp/t82.pb.gz "$o" >> $O/t82.txt 2>&1; done
cat $O/t82.txt
cd $OUT && tar czf s.tgz s && rm -rf s
