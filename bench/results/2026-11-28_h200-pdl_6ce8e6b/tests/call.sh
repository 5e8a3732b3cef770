#!/usr/bin/env bash
# stop 21, call 2: the whole GPU suite with pdl on (the default), the engines against lc0 on T82
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/t; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C"; nproc; } > $O/info.txt 2>&1
cp .dev/call43.sh $O/call.sh
timeout 440 python3 -m pytest -m gpu -q -p no:cacheprovider tests/backends/gpu tests/api/test_net_gpu.py tests/attention/test_gpu_attention.py tests/gpu tests/kernels > $O/gpu_tests.log 2>&1
echo "gpu tests rc $?" >> $O/info.txt; tail -3 $O/gpu_tests.log >> $O/info.txt; el gpu-tests
cd $OUT && tar czf t.tgz t && rm -rf t
