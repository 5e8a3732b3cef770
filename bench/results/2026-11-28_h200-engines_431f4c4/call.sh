#!/usr/bin/env bash
# stop 17, call 1: lc0py vs lc0 on the five nets (two-thread feeder 7edfe31, gather without refcounts 3f6b9ea)
set -u
export LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
mkdir -p $OUT/e
{ echo "tree $C"; date -u; } > $OUT/e/info.txt
OUT=$OUT/e NETS=.dev/nets LC0=.dev/lc0-cuda/lc0-on-device ROUNDS=3 TIMELINES=1 BUDGET_S=400 timeout 570 scripts/device/engine_vs_lc0 > $OUT/e/stdout.txt 2>&1
echo "rc $? $(date -u)" >> $OUT/e/info.txt
cd $OUT && tar czf e.tgz e && rm -rf e
