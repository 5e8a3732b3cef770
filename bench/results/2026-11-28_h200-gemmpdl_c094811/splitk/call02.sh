#!/usr/bin/env bash
export PYTHONPATH=$PWD/.whl/site:$PWD LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
mkdir -p $OUT/r
for kc in ${KCS:-128 256}; do echo "== kc $kc"; timeout 200 python3 scripts/bench/gemm_splitk_probe.py --kc $kc; echo "rc $?"; done 2>&1 | tee $OUT/r/splitk.txt
