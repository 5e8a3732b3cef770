#!/usr/bin/env bash
# stop 19, call 5: the final tree against lc0 0.32.1 on the five nets (issue 26's table), 3 rounds
set -u
O=$OUT/e; mkdir -p $O
cp .dev/call35.sh $O/call.sh
OUT=$O NETS=.nets LC0=.dev/lc0-cuda/lc0-on-device ROUNDS=3 TIMELINES=0 BUDGET_S=440 GPU_CHECK_COMMIT=$C \
  timeout 560 scripts/device/engine_vs_lc0 > $O/stdout.txt 2>&1
echo "rc $?" >> $O/stdout.txt
cd $OUT && tar czf e.tgz e && rm -rf e
