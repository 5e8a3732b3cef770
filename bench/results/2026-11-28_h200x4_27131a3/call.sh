#!/usr/bin/env bash
# issue 27 on 4 GPUs after the child feeding, bulk-eval start/tail and search feeder changes;
# then issue 28's persistent flash grid (flash_v2_check) on GPU 0 of the same host
set -u
export PYTHONUNBUFFERED=1 GPU_CHECK_COMMIT=$C
O=$OUT/s4; mkdir -p $O; t=$(date +%s)
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "tree $C"; nproc; } > $O/info.txt
CALL_LIMIT=340 RAY_DEADLINE=270 timeout 345 scripts/device/scaling --out $O/s > $O/stdout.txt 2>&1
echo "scaling rc $? at $(date -u) $(( $(date +%s) - t )) s" >> $O/info.txt
(cd $OUT && tar czf s4.tgz s4)
F=$OUT/fa; mkdir -p $F
left=$(( 575 - ($(date +%s) - t) ))
echo "flash check budget ${left} s" >> $O/info.txt
CUDA_VISIBLE_DEVICES=0 BUDGET_S=$(( left > 150 ? left - 120 : 30 )) timeout $left scripts/device/flash_v2_check --out $F > $F/stdout.txt 2>&1
echo "flash rc $? at $(date -u) $(( $(date +%s) - t )) s" >> $O/info.txt
cd $OUT && tar czf s4.tgz s4 && tar czf fa.tgz fa && rm -rf s4 fa
