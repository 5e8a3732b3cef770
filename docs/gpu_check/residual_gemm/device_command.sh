#!/usr/bin/env bash
# Issue 11, tenth stop: (1) the Winograd GEMM with V / M element-major or tile-major
# (gemm_layouts.py); (2) every kernel of one res-20x256 forward pass at 1024 in context
# (Nsight Compute, duration only, launches 600-799 of ncu_ctx.py: one whole forward pass in there).
#   C=<commit> bash docs/gpu_check/residual_gemm/device_command.sh
set -u
R=$OUT/r; mkdir -p $R; D=docs/gpu_check
mkdir -p /tmp/site && tar -xJf .whl/numba312.tar.xz -C /tmp/site
export PYTHONPATH=/tmp/site:$PWD/.whl/site:$PWD NUMBA_CACHE_DIR=/tmp/nbcache PYTHONUNBUFFERED=1
L=$R/gemm.log
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u; echo "tree ${C:-?}"; } >$L
timeout 120 python3 $D/residual_gemm/gemm_layouts.py >>$L 2>>$R/err
f=/tmp/res-20x256.pb.gz
python3 -m lc0py make-net --preset res-20x256 -o $f >/dev/null 2>&1
LC0PY_KERNEL_CACHE=/tmp/kcN timeout 300 ncu --clock-control none --cache-control none --launch-skip 600 --launch-count 200 \
  --metrics gpu__time_duration.sum --csv python3 $D/residual_gap/ncu_ctx.py $f 1024 >$R/forward.csv 2>>$R/err
date -u >>$L
