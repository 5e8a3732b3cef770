#!/usr/bin/env bash
# which GEMM shapes (run once through torch's cuBLAS) slow T82's captured batch-1 graph afterwards
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/p; mkdir -p $O
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C"; } > $O/info.txt 2>&1
cp .dev/call19.sh .dev/poison.py $O/
[ -f /tmp/t82.pb.gz ] || timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1
for s in 64x768x2304 128x768x2304 128x768x768 128x768x1024 256x768x2304 1024x768x2304 4096x768x2304 64x2048x256 4096x4096x4096 16x64x64; do
  timeout 60 python3 .dev/poison.py /tmp/t82.pb.gz $s 2>/dev/null | grep -v Warn >> $O/t82.txt
done
cat $O/t82.txt
cd $OUT && tar czf p.tgz p && rm -rf p
