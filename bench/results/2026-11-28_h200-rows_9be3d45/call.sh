#!/usr/bin/env bash
# stop 19, call 4: is smolgen_rows (with compress_rows now) faster than the GEMMs at 2-8 positions?
# kernel profiles (CUPTI, graphs off) and backendbench A/B, 3 rounds, order alternated
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/g; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C"; nproc; } > $O/info.txt 2>&1
cp .dev/call34.sh $O/call.sh
timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1; el make-net
for b in 2 4 8; do
  timeout 60 python3 scripts/bench/gpu_kernel_profile.py --weights /tmp/t82.pb.gz --batch $b --top 40 > $O/profile_b${b}_gemms.txt 2>&1
  timeout 60 python3 scripts/bench/gpu_kernel_profile.py --weights /tmp/t82.pb.gz --batch $b --top 40 --backend-opts smolgen_rows=on > $O/profile_b${b}_rows.txt 2>&1
done; el profile
BB="--batch-sizes 1,2,3,4,6,8 --batches 400 --json"
for r in 1 2 3; do
  if [ $((r % 2)) = 1 ]; then order="gemms rows"; else order="rows gemms"; fi
  for k in $order; do
    o=""; [ $k = rows ] && o="-o smolgen_rows=on"
    timeout 60 python3 -m lc0py backendbench -w /tmp/t82.pb.gz -b cuda-fp16 $o $BB > $O/bb_${k}_$r.jsonl 2>>$O/bb.err
  done
done; el backendbench
cd $OUT && tar czf g.tgz g && rm -rf g
