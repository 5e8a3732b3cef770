#!/usr/bin/env bash
# issue 27 on 4 GPUs: scaling with the per-GPU feeder path (bulk-eval) and the search feeder
set -u
export PYTHONUNBUFFERED=1 GPU_CHECK_COMMIT=$C
O=$OUT/s4; mkdir -p $O
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "tree $C"; nproc; free -g | head -2; } > $O/info.txt
CALL_LIMIT=560 RAY_DEADLINE=420 timeout 575 scripts/device/scaling --out $O/s > $O/stdout.txt 2>&1
echo "rc $? at $(date -u)" >> $O/info.txt
cd $OUT && tar czf s4.tgz s4 && rm -rf s4
