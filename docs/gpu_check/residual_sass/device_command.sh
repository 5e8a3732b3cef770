#!/usr/bin/env bash
# Issue 11: the fused steps are issue-bound (their time tracks their instruction count, ../residual_gap/
# and the SE-preload attempt, docs/performance.md). Per-SASS-line instruction counts (Nsight Compute
# source counters, in context: graphs on, --cache-control none) of the staged step at batch 1024, the
# V-only step of a conv1 (launch 169) and the SE + skip step of a conv2 (launch 170), for this tree
# (B: M-row copies without a division per chunk); then e2e A/B against main's kernels (A, .whl/kold).
#   C=<commit> bash docs/gpu_check/residual_sass/device_command.sh
set -u
R=$OUT/r; mkdir -p $R; D=docs/gpu_check
mkdir -p /tmp/site && tar -xJf .whl/numba312.tar.xz -C /tmp/site
export PYTHONPATH=/tmp/site:$PWD/.whl/site:$PWD NUMBA_CACHE_DIR=/tmp/nbcache PYTHONUNBUFFERED=1
OLDK=$PWD/.whl/kold/kernels
L=$R/sass.log
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u; echo "tree ${C:-?}; A = main's kernels, B = this tree's"; } >$L
f=/tmp/res-20x256.pb.gz
python3 -m lc0py make-net --preset res-20x256 -o $f >/dev/null 2>&1
echo "=== verify (B, staged on)" >>$L
LC0PY_KERNEL_CACHE=/tmp/kcB timeout 90 python3 -m lc0py verify -w $f --backend cuda-fp16 -o winograd_staged=on --batch 8 --seed 23 2>&1 | grep -E "PASS|FAIL|rror" >>$L
for l in 169 170; do
  LC0PY_KERNEL_CACHE=/tmp/kcB timeout 200 ncu --clock-control none --cache-control none --kernel-name regex:winograd_output_fused_split_staged \
    --launch-skip $l --launch-count 1 --section SourceCounters --section WarpStateStats --section SpeedOfLight -o /tmp/s$l \
    python3 $D/residual_gap/ncu_ctx.py $f 1024 >/dev/null 2>>$R/err
  echo "=== launch $l" >>$L
  ncu -i /tmp/s$l.ncu-rep --page details --section WarpStateStats --section SpeedOfLight 2>&1 | grep -E "Duration|Warp Cycles Per Issued|Memory Throughput|Compute \(SM\)" >>$L
  ncu -i /tmp/s$l.ncu-rep --page source --csv --print-source sass >$R/sass_$l.csv 2>>$R/err
  gzip -f $R/sass_$l.csv
done
for r in 1 2; do for side in A B; do
  kd=$PWD/kernels; [ $side = A ] && kd=$OLDK
  LC0PY_KERNEL_DIR=$kd LC0PY_KERNEL_CACHE=/tmp/kc$side timeout 90 python3 $D/residual_h100b/e2e.py $f 256,1024 | sed "s|^{|{\"side\": \"$side\", |" >>$L
done; done
date -u >>$L
