#!/usr/bin/env bash
# our kernels' preferred shared-memory carveout against the batch-1 slowdown after other passes
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/c; mkdir -p $O
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C"; } > $O/info.txt 2>&1
cp .dev/call17.sh .dev/carveprobe.py $O/
[ -f /tmp/t82.pb.gz ] || timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1
for m in default 0 25 50 100 default 0; do timeout 100 python3 .dev/carveprobe.py /tmp/t82.pb.gz $m b4 >> $O/t82.txt 2>&1; done
for m in default 0; do timeout 100 python3 .dev/carveprobe.py .nets/maia-1900.pb.gz $m >> $O/maia.txt 2>&1; done
cat $O/*.txt
cd $OUT && tar czf c.tgz c && rm -rf c
