#!/usr/bin/env bash
export PYTHONPATH=$PWD/.whl/site:$PWD LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
mkdir -p $OUT/r
for pr in 0 2; do echo "== probe $pr"; timeout 100 python3 scripts/bench/gemm_splitk_probe.py --probe $pr --reps 30 | grep -E "chain|WRONG"; done 2>&1 | tee $OUT/r/variants.txt
