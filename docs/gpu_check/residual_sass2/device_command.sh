#!/usr/bin/env bash
# Issue 11, tenth stop: where the tile-major steps' instructions go (LC0_STEP_C build, se_gates
# auto at 1024): Nsight Compute source counters per SASS line, in context, block 1's conv1 and
# conv2 steps (launches 171 and 172 of the staged kernel in ncu_ctx.py at 1024).
#   C=<commit> bash docs/gpu_check/residual_sass2/device_command.sh
set -u
R=$OUT/r; mkdir -p $R; D=docs/gpu_check
mkdir -p /tmp/site && tar -xJf .whl/numba312.tar.xz -C /tmp/site
export PYTHONPATH=/tmp/site:$PWD/.whl/site:$PWD NUMBA_CACHE_DIR=/tmp/nbcache PYTHONUNBUFFERED=1
L=$R/sass.log
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u; echo "tree ${C:-?}"; } >$L
f=/tmp/res-20x256.pb.gz
python3 -m lc0py make-net --preset res-20x256 -o $f >/dev/null 2>&1
for l in 171 172; do
  LC0PY_KERNEL_CACHE=/tmp/kcN timeout 200 ncu --clock-control none --cache-control none --kernel-name regex:winograd_output_fused_split_staged \
    --launch-skip $l --launch-count 1 --section SourceCounters --section WarpStateStats --section SpeedOfLight --section MemoryWorkloadAnalysis -o /tmp/s$l \
    python3 $D/residual_gap/ncu_ctx.py $f 1024 >/dev/null 2>>$R/err
  echo "=== launch $l" >>$L
  ncu -i /tmp/s$l.ncu-rep --page details --section WarpStateStats --section SpeedOfLight --section MemoryWorkloadAnalysis 2>&1 | grep -E "Duration|Warp Cycles Per Issued|Throughput|Compute \(SM\)|Busy|Bandwidth|Registers|Instructions" >>$L
  ncu -i /tmp/s$l.ncu-rep --page source --csv --print-source sass >$R/sass_$l.csv 2>>$R/err
  gzip -f $R/sass_$l.csv
done
date -u >>$L
