#!/usr/bin/env bash
# stop 26, call 1: cuBLASLt's algorithms for T82's fp16 GEMMs at batch 256/1024, and a per-kernel profile at 256
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/c29; mkdir -p $O; cp .dev/call29.sh .dev/lt_big.py $O/
{ date -u; nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm --format=csv,noheader; nproc; echo "tree $C"; } > $O/info.txt 2>&1
timeout 300 python3 .dev/lt_big.py $O/sweep.json > $O/sweep.txt 2>&1; echo "sweep rc $?" >> $O/info.txt
python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz >> $O/info.txt 2>&1
for b in 256 1024; do timeout 150 python3 scripts/bench/gpu_kernel_profile.py --weights /tmp/t82.pb.gz --batch $b --top 30 > $O/profile_b$b.txt 2>&1; echo "profile $b rc $?" >> $O/info.txt; done
cat $O/info.txt; tail -3 $O/sweep.txt
