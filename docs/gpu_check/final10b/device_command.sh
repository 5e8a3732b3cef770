#!/usr/bin/env bash
# Tenth stop, last device seconds: the final tree once more on another H100 -- res-20x256 e2e
# (residual_h100b/e2e.py, like for like), backendbench, then the PyTorch peer, at 256 and 1024.
#   C=<commit> bash docs/gpu_check/final10b/device_command.sh
set -u
mkdir -p /tmp/site && tar -xJf .whl/numba312.tar.xz -C /tmp/site
export PYTHONPATH=/tmp/site:$PWD/.whl/site:$PWD NUMBA_CACHE_DIR=/tmp/nbcache PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/kc
L=$OUT/final10b.log
{ nvidia-smi --query-gpu=name --format=csv,noheader; date -u; echo "tree ${C:-?}"; } >$L
f=/tmp/res-20x256.pb.gz
python3 -m lc0py make-net --preset res-20x256 -o $f >/dev/null 2>&1
python3 docs/gpu_check/residual_h100b/e2e.py $f 256,1024 >>$L 2>>$OUT/err
python3 -m lc0py backendbench -w $f -b cuda-fp16 -o max_batch=1024 --batch-sizes 256,1024 --batches 30 --json >>$L 2>>$OUT/err
python3 scripts/peer_torch.py --weights $f --sizes 256,1024 >>$L 2>>$OUT/err
date -u >>$L
