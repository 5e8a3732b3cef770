#!/usr/bin/env bash
# stop 19, call 3: the final tree: kernel profiles at batch 1 / 4 with and without smolgen_compress,
# backendbench A/B (order alternated), verify on three nets, the whole GPU test suite
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/f; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C"; nproc; } > $O/info.txt 2>&1
cp .dev/call33.sh $O/call.sh
timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1; el make-net
for b in 1 4; do
  timeout 60 python3 scripts/bench/gpu_kernel_profile.py --weights /tmp/t82.pb.gz --batch $b --top 40 --backend-opts smolgen_rows=on > $O/profile_b${b}_compress.txt 2>&1
  timeout 60 python3 scripts/bench/gpu_kernel_profile.py --weights /tmp/t82.pb.gz --batch $b --top 40 --backend-opts smolgen_rows=on,smolgen_compress=off > $O/profile_b${b}_nocompress.txt 2>&1
done; el profile
BB="--batch-sizes 1,2,4 --batches 400 --json"
for r in 1 2; do
  for k in on off; do [ $r = 2 ] && k=$([ $k = on ] && echo off || echo on)
    timeout 50 python3 -m lc0py backendbench -w /tmp/t82.pb.gz -b cuda-fp16 -o smolgen_rows=on,smolgen_compress=$k $BB > $O/bb_$k\_$r.jsonl 2>>$O/bb.err
  done
done; el backendbench
for w in /tmp/t82.pb.gz .nets/maia-1900.pb.gz .nets/meangirl-8.pb.gz; do
  timeout 60 python3 -m lc0py verify -w $w -b cuda-fp16 > $O/verify_$(basename $w .pb.gz).txt 2>&1; echo "verify $w rc $?" >> $O/info.txt
done; el verify
timeout 390 python3 -m pytest -m gpu -q -p no:cacheprovider tests/backends/gpu tests/api/test_net_gpu.py tests/attention/test_gpu_attention.py tests/gpu > $O/gpu_tests.log 2>&1
echo "gpu tests rc $?" >> $O/info.txt; tail -3 $O/gpu_tests.log >> $O/info.txt; el gpu-tests
cd $OUT && tar czf f.tgz f && rm -rf f
