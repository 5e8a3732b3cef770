#!/usr/bin/env bash
# stop 21, call 4: both engines on the five nets, 3 alternating rounds, pdl on (the default)
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/e; mkdir -p $O
cp .dev/call45.sh $O/call.sh
OUT=$O NETS=.nets LC0=.dev/lc0-cuda/lc0-on-device ROUNDS=3 TIMELINES=0 BUDGET_S=470 scripts/device/engine_vs_lc0 > $O/run.log 2>&1
echo "rc $?" >> $O/run.log
cd $OUT && tar czf e.tgz e && rm -rf e
