#!/usr/bin/env bash
# device time of T82's batch-1..4 graphs against the backend's max_batch (buffer capacity)
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/m; mkdir -p $O
{ date -u; nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader; echo "tree $C"; } > $O/info.txt 2>&1
cp .dev/call12.sh .dev/maxbatch.py $O/
[ -f /tmp/t82.pb.gz ] || timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1
timeout 200 python3 .dev/maxbatch.py /tmp/t82.pb.gz 1,4,16,64,256,1024 1,4 > $O/t82.txt 2>&1
timeout 120 python3 .dev/maxbatch.py .nets/maia-1900.pb.gz 1,4,64,1024 1 > $O/maia.txt 2>&1
cat $O/*.txt
cd $OUT && tar czf m.tgz m && rm -rf m
