#!/usr/bin/env bash
# call 2: issue 26 engine vs lc0, five nets, TaskWorkers 0 vs lc0's rule; one H100
set -u
export PYTHONPATH=$PWD/.dev/site:$PWD PYTHONUNBUFFERED=1 GPU_CHECK_COMMIT=$C
mkdir -p .whl && ln -sfn $PWD/.dev/site .whl/site
O=$OUT/e; mkdir -p $O
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "tree $C"; nproc; } > $O/info.txt
OUT=$O/ev NETS=$PWD/.dev/nets LC0=$PWD/.dev/lc0-cuda/lc0-on-device ROUNDS=2 TASK_WORKERS="0 -1" BUDGET_S=330 \
  timeout 545 scripts/device/engine_vs_lc0 > $O/stdout.txt 2>&1
echo "rc $? at $(date -u)" >> $O/info.txt
cd $OUT && tar czf e.tgz e && rm -rf e
