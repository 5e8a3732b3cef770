#!/usr/bin/env bash
# stop 20, call 5: the final code's whole GPU test suite and verify on three nets
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/t; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C"; nproc; } > $O/info.txt 2>&1
cp .dev/call41.sh $O/call.sh
timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1; el make-net
for w in /tmp/t82.pb.gz .nets/maia-1900.pb.gz .nets/meangirl-8.pb.gz; do
  timeout 60 python3 -m lc0py verify -w $w -b cuda-fp16 > $O/verify_$(basename $w .pb.gz).txt 2>&1; echo "verify $w rc $?" >> $O/info.txt
done; el verify
timeout 420 python3 -m pytest -m gpu -q -p no:cacheprovider tests/backends/gpu tests/api/test_net_gpu.py tests/attention/test_gpu_attention.py tests/gpu > $O/gpu_tests.log 2>&1
echo "gpu tests rc $?" >> $O/info.txt; tail -3 $O/gpu_tests.log >> $O/info.txt; el gpu-tests
cd $OUT && tar czf t.tgz t && rm -rf t
