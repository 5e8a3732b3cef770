#!/usr/bin/env bash
# Nsight Compute on the fused Winograd step (res-20x256, fp16, batch 1024, graphs off): stall reasons,
# speed of light, memory, occupancy. Clocks left alone (--clock-control none, METHOD.md).
set -u
mkdir -p /tmp/site && tar -xJf .whl/numba312.tar.xz -C /tmp/site
export PYTHONPATH=/tmp/site:$PWD/.whl/site:$PWD NUMBA_CACHE_DIR=/tmp/nbcache PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/kc
L=$OUT/ncu_fused.txt
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; echo "tree ${C:-?}"; which ncu; ncu --version | tail -1; } >$L 2>&1
f=/tmp/res-20x256.pb.gz
python3 -m lc0py make-net --preset res-20x256 -o $f >>$L 2>&1
timeout 300 ncu --clock-control none --kernel-name regex:winograd_output_fused --launch-skip 84 --launch-count 1 \
  --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats \
  --section SchedulerStats --section WarpStateStats --section InstructionStats \
  -o $OUT/fused --force-overwrite \
  python3 -m lc0py backendbench -w $f -b cuda-fp16 -o max_batch=1024,graphs=off --batch-sizes 1024 --batches 4 >>$L 2>&1
ncu --import $OUT/fused.ncu-rep --page details >>$L 2>&1
date -u >>$L
