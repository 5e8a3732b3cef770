#!/usr/bin/env bash
# stop 17, call 6: smolgen_rows (kernels/dense_rows.hip) on the device: its GPU tests, backendbench A/B at
# batch 1-16 (3 alternating rounds), kernel profile at batch 1, verify; then the full GPU test suite
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/r; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C"; } > $O/info.txt 2>&1
ln -sfn $PWD/.dev/nets .nets
timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1; el make-net
timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider tests/backends/gpu/test_gpu_fusions.py > $O/fusion_tests.log 2>&1
echo "fusion tests rc $?" >> $O/info.txt; tail -2 $O/fusion_tests.log >> $O/info.txt; el fusion-tests
BB="--batch-sizes 1,2,4,8,16 --batches 300 --json"
for r in 1 2 3; do
  timeout 60 python3 -m lc0py backendbench -w /tmp/t82.pb.gz -b cuda-fp16 -o smolgen_rows=off $BB > $O/bb_off_$r.jsonl 2>>$O/bb.err
  timeout 60 python3 -m lc0py backendbench -w /tmp/t82.pb.gz -b cuda-fp16 $BB > $O/bb_on_$r.jsonl 2>>$O/bb.err
done; el backendbench
for v in off on; do
  timeout 90 python3 scripts/bench/gpu_kernel_profile.py --weights /tmp/t82.pb.gz --batch 1 --top 30 --backend-opts smolgen_rows=$v > $O/profile_b1_$v.txt 2>&1
done; el profile
for w in /tmp/t82.pb.gz; do
  timeout 90 python3 -m lc0py verify -w $w -b cuda-fp16 > $O/verify.txt 2>&1; echo "verify $w rc $?" >> $O/info.txt
done; el verify
timeout 400 python3 -m pytest -m gpu -q -p no:cacheprovider tests/backends/gpu tests/api/test_net_gpu.py tests/attention/test_gpu_attention.py tests/gpu > $O/gpu_tests.log 2>&1
echo "gpu tests rc $?" >> $O/info.txt; tail -3 $O/gpu_tests.log >> $O/info.txt; el gpu-tests
cd $OUT && tar czf r.tgz r && rm -rf r
