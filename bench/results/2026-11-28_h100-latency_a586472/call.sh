#!/usr/bin/env bash
# issue 28: batch-1 latency of T82 fp16 on an H100: where it goes (per-kernel profile at batch 1 / 16,
# graphs off) against backendbench's wall time per batch (graphs on)
set -u
export PYTHONPATH=$PWD/.dev/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/p; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C"; nproc; } > $O/info.txt 2>&1
timeout 90 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > $O/makenet.txt 2>&1; el make-net
for r in 1 2; do
timeout 120 python3 -m lc0py backendbench -w /tmp/t82.pb.gz -b cuda-fp16 -o max_batch=1024 --batch-sizes 1,16,64 --batches 300 --json > $O/bb_small_$r.jsonl 2>> $O/bb.err
timeout 120 python3 -m lc0py backendbench -w /tmp/t82.pb.gz -b cuda-fp16 -o max_batch=64,graphs=off --batch-sizes 1,16 --batches 300 --json > $O/bb_nograph_$r.jsonl 2>> $O/bb.err
done
el bb
for b in 1 16; do
  timeout 150 python3 scripts/bench/gpu_kernel_profile.py --weights /tmp/t82.pb.gz --batch $b --top 40 > $O/profile_b$b.txt 2>&1
done
el profile
cd $OUT && tar czf p.tgz p && rm -rf p
