#!/usr/bin/env bash
# Issue 11: what the SE costs the fused step, as a ceiling for moving it out of the step: this tree's
# GPU residual tests, then like-for-like e2e of res-20x256 with and without SE (make-net --no-se),
# alternating, 2 rounds, and the in-context step durations of the no-SE net (Nsight Compute).
#   C=<commit> bash docs/gpu_check/residual_nose/device_command.sh
set -u
R=$OUT/r; mkdir -p $R; D=docs/gpu_check
mkdir -p /tmp/site && tar -xJf .whl/numba312.tar.xz -C /tmp/site
export PYTHONPATH=/tmp/site:$PWD/.whl/site:$PWD NUMBA_CACHE_DIR=/tmp/nbcache PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/kcB
L=$R/nose.log
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u; echo "tree ${C:-?}"; } >$L
f=/tmp/res-20x256.pb.gz; g=/tmp/res-20x256-nose.pb.gz
python3 -m lc0py make-net --preset res-20x256 -o $f >/dev/null 2>&1
python3 -m lc0py make-net --preset res-20x256 --no-se -o $g >/dev/null 2>&1
echo "=== GPU residual tests" >>$L
timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/backends/gpu/test_gpu_residual.py tests/backends/gpu/test_runner.py 2>&1 | tail -2 >>$L
for r in 1 2; do
  timeout 90 python3 $D/residual_h100b/e2e.py $f 256,1024 | sed 's|^{|{"side": "se", |' >>$L
  timeout 90 python3 $D/residual_h100b/e2e.py $g 256,1024 | sed 's|^{|{"side": "nose", |' >>$L
done
timeout 200 ncu --clock-control none --cache-control none --kernel-name regex:"winograd_output_fused" --launch-skip 168 --launch-count 6 \
  --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__inst_executed.sum --csv python3 $D/residual_gap/ncu_ctx.py $g 1024 >$R/ncu_nose.csv 2>>$R/err
date -u >>$L
