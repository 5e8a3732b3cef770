#!/usr/bin/env bash
# Issue 11, res-20x256 at 1024: where the end-to-end batch's 0.6-0.8 ms beyond the forward pass
# goes (timeline.py), the SM clock while it runs, and the fused step and GEMM in context (Nsight
# Compute with --cache-control none: each kernel sees the L2 its predecessor left), at 256 and 1024.
#   C=<commit> bash docs/gpu_check/residual_gap/device_command.sh
set -u
R=$OUT/r; mkdir -p $R; D=docs/gpu_check/residual_gap
mkdir -p /tmp/site && tar -xJf .whl/numba312.tar.xz -C /tmp/site
export NUMBA_CACHE_DIR=/tmp/nbcache PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/kcN PYTHONPATH=/tmp/site:$PWD/.whl/site:$PWD
L=$R/gap.log
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,power.limit --format=csv,noheader; date -u; echo "tree ${C:-?}"; } >$L
f=/tmp/res-20x256.pb.gz
python3 -m lc0py make-net --preset res-20x256 -o $f >/dev/null 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv -lms 100 >$R/clocks.csv &
SMI=$!
for r in 1 2; do
  timeout 80 python3 $D/timeline.py $f 256,1024 >>$L 2>>$R/err
  timeout 80 python3 $D/timeline.py $f 256,1024 prefilled >>$L 2>>$R/err
done
kill $SMI
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,sm__inst_executed.sum,sm__cycles_elapsed.avg.per_second
for b in 256 1024; do
  echo "=== ncu in context, batch $b" >>$L
  timeout 200 ncu --clock-control none --cache-control none --kernel-name regex:"winograd_output_fused|nvjet" \
    --launch-skip 336 --launch-count 8 --metrics $M --csv python3 $D/ncu_ctx.py $f $b >>$R/ncu_$b.csv 2>>$R/err
done
echo "=== ncu warp states, staged step in context, batch 1024" >>$L
timeout 200 ncu --clock-control none --cache-control none --kernel-name regex:"winograd_output_fused" \
  --launch-skip 170 --launch-count 2 --section WarpStateStats --section SpeedOfLight python3 $D/ncu_ctx.py $f 1024 >>$L 2>>$R/err
date -u >>$L
