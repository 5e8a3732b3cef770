#!/usr/bin/env bash
# stop 19, call 6: smolgen_compress on its own (dense 2 by GEMM) at 1-64 positions: its GPU tests,
# kernel profiles at 4 / 16 / 32 on and off, backendbench A/B at 1-64 (2 rounds, order alternated)
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/h; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C"; nproc; } > $O/info.txt 2>&1
cp .dev/call36.sh $O/call.sh
timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1; el make-net
timeout 110 python3 -m pytest -m gpu -q -p no:cacheprovider tests/backends/gpu/test_gpu_fusions.py -k "compress or smolgen_rows" > $O/fusion_tests.log 2>&1
echo "fusion tests rc $?" >> $O/info.txt; tail -2 $O/fusion_tests.log >> $O/info.txt; el fusion-tests
for b in 4 16 32; do
  for k in on off; do
    timeout 40 python3 scripts/bench/gpu_kernel_profile.py --weights /tmp/t82.pb.gz --batch $b --top 12 --backend-opts smolgen_compress=$k > $O/profile_b${b}_$k.txt 2>&1
  done
done; el profile
BB="--batch-sizes 1,2,4,8,16,24,32,48,64 --batches 300 --json"
for r in 1 2; do
  if [ $r = 1 ]; then order="off on"; else order="on off"; fi
  for k in $order; do
    timeout 45 python3 -m lc0py backendbench -w /tmp/t82.pb.gz -b cuda-fp16 -o smolgen_compress=$k $BB > $O/bb_${k}_$r.jsonl 2>>$O/bb.err
  done
done; el backendbench
cd $OUT && tar czf h.tgz h && rm -rf h
