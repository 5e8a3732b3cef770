#!/usr/bin/env bash
# which kernels of T82's batch-1 graph slow down after an eager batch-2 pass (CUPTI via torch.profiler)
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/k; mkdir -p $O
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C"; } > $O/info.txt 2>&1
cp .dev/call16.sh .dev/kprobe.py $O/
[ -f /tmp/t82.pb.gz ] || timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1
timeout 200 python3 .dev/kprobe.py /tmp/t82.pb.gz > $O/t82.txt 2>&1
cat $O/*.txt | grep -v "^\[W\|STAGE" | head -60
cd $OUT && tar czf k.tgz k && rm -rf k
