#!/usr/bin/env bash
# stop 28, call 1: where T82's device time goes now (CUPTI per kernel), fp16 at 256/1024, fp8 at 1024
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c LC0PY_TUNED_DIR=/tmp/tuned41
O=$OUT/profile; mkdir -p $O; t=$(date +%s)
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C"; } > $O/info.txt 2>&1
cp .dev/call41.sh $O/
timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1
for b in 256 1024; do
  timeout 150 python3 scripts/bench/gpu_kernel_profile.py --weights /tmp/t82.pb.gz --batch $b --top 40 > $O/fp16_$b.txt 2>&1
  echo "fp16 $b rc $? $(( $(date +%s) - t )) s" >> $O/info.txt
done
timeout 150 python3 scripts/bench/gpu_kernel_profile.py --weights /tmp/t82.pb.gz --backend cuda-fp8 --batch 1024 --top 40 > $O/fp8_1024.txt 2>&1
echo "fp8 1024 rc $? $(( $(date +%s) - t )) s" >> $O/info.txt
cat $O/info.txt; head -50 $O/fp16_256.txt
