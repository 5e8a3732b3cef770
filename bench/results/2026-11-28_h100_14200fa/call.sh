#!/usr/bin/env bash
# call 1: fp8fuse on the device (fp8_check), one H100
set -u
export PYTHONPATH=$PWD/.dev/site:$PWD PYTHONUNBUFFERED=1
O=$OUT/c1; mkdir -p $O
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "tree $C"; nproc; } > $O/info.txt
export GPU_CHECK_COMMIT=$C
ROUNDS=2 BUDGET_S=230 timeout 540 scripts/device/fp8_check --out $O/fp8 > $O/fp8_check.out 2>&1
echo "rc $? at $(date -u)" >> $O/info.txt
cd $OUT && tar czf c1.tgz c1 && rm -rf c1
