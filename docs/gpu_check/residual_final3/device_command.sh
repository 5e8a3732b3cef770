#!/usr/bin/env bash
# Issue 11: kernel time favours this tree by 1.3x (../residual_final2) but backendbench showed M = A
# on that machine. Here: the like-for-like e2e timing (../residual_h100b/e2e.py, prebuilt batch) of
# M and A alternating, and backendbench with graphs off, and CUDA-event time of the forward pass alone.
#   C=<commit> bash docs/gpu_check/residual_final3/device_command.sh
set -u
R=$OUT/r; mkdir -p $R
mkdir -p /tmp/site && tar -xJf .whl/numba312.tar.xz -C /tmp/site
SITE=/tmp/site:$PWD/.whl/site
export NUMBA_CACHE_DIR=/tmp/nbcache PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/kcN
L=$R/final3.log
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u; echo "tree ${C:-?}"; } >$L
f=/tmp/res-20x256.pb.gz
PYTHONPATH=$SITE:$PWD python3 -m lc0py make-net --preset res-20x256 -o $f >/dev/null 2>&1
for r in 1 2 3; do for side in M A; do
  pp=$SITE:$PWD; kc=/tmp/kcN; [ $side = M ] && pp=$SITE:$PWD/.whl/oldtree && kc=/tmp/kcM
  PYTHONPATH=$pp LC0PY_KERNEL_CACHE=$kc timeout 100 python3 docs/gpu_check/residual_h100b/e2e.py $f 64,256,1024 | sed "s|^{|{\"side\": \"$side\", |" >>$L
  PYTHONPATH=$pp LC0PY_KERNEL_CACHE=$kc timeout 100 python3 docs/gpu_check/residual_final3/fwd_events.py $f 256,1024 | sed "s|^{|{\"side\": \"$side\", |" >>$L
done; done
for side in M A; do
  pp=$SITE:$PWD; kc=/tmp/kcN; [ $side = M ] && pp=$SITE:$PWD/.whl/oldtree && kc=/tmp/kcM
  PYTHONPATH=$pp LC0PY_KERNEL_CACHE=$kc timeout 100 python3 -m lc0py backendbench -w $f -b cuda-fp16 -o max_batch=1024,graphs=off --batch-sizes 64,256,1024 --batches 30 --json | sed "s|^{|{\"side\": \"$side\", \"graphs\": \"off\", |" >>$L
done
date -u >>$L
