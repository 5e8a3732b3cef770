#!/usr/bin/env bash
# Where res-20x256's and t78's time goes with the split fused step on (H200/H100), and the split
# kernel's executed instructions per SASS line. Carry .whl (numba312.tar.xz; site/).
#   C=<commit> bash docs/gpu_check/residual_profile/device_command.sh
set -u
R=$OUT/r; mkdir -p $R
mkdir -p /tmp/site && tar -xJf .whl/numba312.tar.xz -C /tmp/site
export PYTHONPATH=/tmp/site:$PWD/.whl/site:$PWD NUMBA_CACHE_DIR=/tmp/nbcache PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/kc
L=$R/profile.log
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; echo "tree ${C:-?}"; } >$L
f=/tmp/res-20x256.pb.gz; t=/tmp/t78.pb.gz
python3 -m lc0py make-net --preset res-20x256 -o $f >>$L 2>&1
python3 -m lc0py make-net --preset t78 -o $t >>$L 2>&1
for b in 256 1024; do
  echo "=== kernel profile res-20x256 batch $b winograd_split=on" >>$L
  timeout 120 python3 scripts/bench/gpu_kernel_profile.py --weights $f --batch $b --backend-opts winograd_split=on --top 14 >>$L 2>&1
done
echo "=== kernel profile t78 batch 1024" >>$L
timeout 150 python3 scripts/bench/gpu_kernel_profile.py --weights $t --batch 1024 --top 14 >>$L 2>&1
echo "=== ncu source counters, split kernel, batch 1024" >>$L
timeout 150 ncu --clock-control none --kernel-name regex:winograd_output_fused_split --launch-skip 84 --launch-count 1 \
  --section SourceCounters --section WarpStateStats -o /tmp/split python3 -m lc0py backendbench -w $f -b cuda-fp16 \
  -o max_batch=1024,graphs=off,winograd_split=on --batch-sizes 1024 --batches 4 >/dev/null 2>>$L
ncu -i /tmp/split.ncu-rep --page details --section WarpStateStats >>$L 2>&1
ncu -i /tmp/split.ncu-rep --page source --csv --print-source sass >$R/split_sass.csv 2>>$L
gzip -f $R/split_sass.csv
echo "=== t78 backendbench + peer" >>$L
timeout 120 python3 -m lc0py backendbench -w $t -b cuda-fp16 -o max_batch=1024 --batch-sizes 64,256,1024 --batches 20 --json >>$L 2>>$R/bb.err
timeout 200 python3 scripts/compare/peer_torch.py --weights $t --sizes 64,256,1024 >>$L 2>>$R/peer.err
date -u >>$L
