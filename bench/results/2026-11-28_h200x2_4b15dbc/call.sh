#!/usr/bin/env bash
# call 4: issue 27 bulk-eval feeding (bulkfeed) on 2 GPUs
set -u
export PYTHONPATH=$PWD/.whl/site PYTHONUNBUFFERED=1 GPU_CHECK_COMMIT=$C

O=$OUT/s2; mkdir -p $O
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "tree $C"; nproc; free -g | head -2; } > $O/info.txt
SEARCH=0 GAMES=8000 timeout 560 scripts/device/scaling --out $O/s > $O/stdout.txt 2>&1
echo "rc $? at $(date -u)" >> $O/info.txt
cd $OUT && tar czf s2.tgz s2 && rm -rf s2
