#!/usr/bin/env bash
# stop 19, call 2: compress_rows with all shares loaded at once: fusion GPU tests, backendbench A/B
# default / smolgen_compress=off / smolgen_rows=on at 1-16 (3 alternating rounds), kernel profiles
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/d; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C"; nproc; } > $O/info.txt 2>&1
cp .dev/call32.sh $O/call.sh
timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1; el make-net
timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider tests/backends/gpu/test_gpu_fusions.py -k "smolgen_rows or fused_paths" > $O/fusion_tests.log 2>&1
echo "fusion tests rc $?" >> $O/info.txt; tail -2 $O/fusion_tests.log >> $O/info.txt; el fusion-tests
BB="--batch-sizes 1,2,4,8,16 --batches 300 --json"
declare -A S=([default]="" [nocompress]="smolgen_compress=off" [rows_on]="smolgen_rows=on" [rows_on_nocompress]="smolgen_rows=on,smolgen_compress=off")
for r in 1 2 3; do
  for k in default nocompress rows_on rows_on_nocompress; do
    o=${S[$k]}; timeout 50 python3 -m lc0py backendbench -w /tmp/t82.pb.gz -b cuda-fp16 ${o:+-o $o} $BB > $O/bb_${k}_$r.jsonl 2>>$O/bb.err
  done
done; el backendbench
for k in default nocompress; do
  o=${S[$k]}; timeout 60 python3 scripts/bench/gpu_kernel_profile.py --weights /tmp/t82.pb.gz --batch 1 --top 40 ${o:+--backend-opts $o} > $O/profile_b1_$k.txt 2>&1
done
timeout 60 python3 scripts/bench/gpu_kernel_profile.py --weights /tmp/t82.pb.gz --batch 4 --top 20 --backend-opts smolgen_rows=on > $O/profile_b4_rows_on.txt 2>&1
el profile
cd $OUT && tar czf d.tgz d && rm -rf d
