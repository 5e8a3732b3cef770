#!/usr/bin/env bash
# call 3: residual FP8 (fp8res + fp8acc) on one H100
set -u
export PYTHONPATH=$PWD/.dev/site:$PWD PYTHONUNBUFFERED=1 GPU_CHECK_COMMIT=$C
mkdir -p .whl && ln -sfn $PWD/.dev/site .whl/site && ln -sfn $PWD/.dev/nets .nets
O=$OUT/r; mkdir -p $O
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "tree $C"; } > $O/info.txt
BUDGET_S=300 timeout 550 scripts/device/fp8_residual_check --out $O/res > $O/stdout.txt 2>&1
echo "rc $? at $(date -u)" >> $O/info.txt
cd $OUT && tar czf r.tgz r && rm -rf r
