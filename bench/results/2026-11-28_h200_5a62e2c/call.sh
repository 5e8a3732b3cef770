#!/usr/bin/env bash
set -u
export PYTHONPATH=$PWD/.dev/site:$PWD PYTHONUNBUFFERED=1
O=$OUT/d; mkdir -p $O
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "tree $C"; } > $O/info.txt
timeout 60 python3 .dev/caldiag.py > $O/caldiag.txt 2>&1
timeout 60 python3 -m pytest -m gpu -q -p no:cacheprovider --tb=short tests/backends/gpu/test_fp8_residual_gpu.py > $O/caltest.txt 2>&1
echo "rc $?" >> $O/info.txt
cd $OUT && tar czf d.tgz d && rm -rf d
