#!/usr/bin/env bash
# stop 17, call 7: smolgen_rows after the rewrite: its GPU tests, backendbench A/B at batch 1-16
# (2 alternating rounds), kernel profile at batch 1 on/off
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/s; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C"; } > $O/info.txt 2>&1
timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1; el make-net
timeout 100 python3 -m pytest -m gpu -q -p no:cacheprovider tests/backends/gpu/test_gpu_fusions.py > $O/fusion_tests.log 2>&1
echo "fusion tests rc $?" >> $O/info.txt; tail -2 $O/fusion_tests.log >> $O/info.txt; el fusion-tests
BB="--batch-sizes 1,2,4,8,16 --batches 300 --json"
for r in 1 2; do
  timeout 50 python3 -m lc0py backendbench -w /tmp/t82.pb.gz -b cuda-fp16 -o smolgen_rows=off $BB > $O/bb_off_$r.jsonl 2>>$O/bb.err
  timeout 50 python3 -m lc0py backendbench -w /tmp/t82.pb.gz -b cuda-fp16 $BB > $O/bb_on_$r.jsonl 2>>$O/bb.err
done; el backendbench
timeout 60 python3 scripts/bench/gpu_kernel_profile.py --weights /tmp/t82.pb.gz --batch 1 --top 30 --backend-opts smolgen_rows=on > $O/profile_b1_on.txt 2>&1
el profile
cd $OUT && tar czf s.tgz s && rm -rf s
