#!/usr/bin/env bash
# host memory check on main and on the fp8-calibration tree; GPU tests of main
set -u
export PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/m; mkdir -p $O; t=$(date +%s)
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "tree $C"; } > $O/info.txt
PYTHONPATH=$PWD/.dev/site:$PWD timeout 90 python3 scripts/device/host_memory_check.py > $O/hostmem_main.txt 2>&1
echo "main rc $? $(( $(date +%s) - t )) s" >> $O/info.txt
(cd .dev/fp8cal && PYTHONPATH=$PWD/../site:$PWD timeout 90 python3 scripts/device/host_memory_check.py) > $O/hostmem_fp8cal.txt 2>&1
echo "fp8cal rc $? $(( $(date +%s) - t )) s" >> $O/info.txt
ln -sfn $PWD/.dev/nets .nets
PYTHONPATH=$PWD/.dev/site:$PWD timeout 340 python3 -m pytest -m gpu -q -p no:cacheprovider tests/backends/gpu tests/api/test_net_gpu.py tests/gpu > $O/gpu_tests.log 2>&1
echo "gpu tests rc $? at $(date -u) $(( $(date +%s) - t )) s" >> $O/info.txt; tail -3 $O/gpu_tests.log >> $O/info.txt
cd $OUT && tar czf m.tgz m && rm -rf m
