#!/usr/bin/env bash
# what slows a captured T82 batch-1 graph from 0.63 to 0.68 ms: own graphs, eager passes, lazy loading
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/u; mkdir -p $O
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C"; } > $O/info.txt 2>&1
cp .dev/call15.sh .dev/twoprobe2.py $O/
[ -f /tmp/t82.pb.gz ] || timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1
for m in owngraph eagerA eagerB captureB; do timeout 100 python3 .dev/twoprobe2.py /tmp/t82.pb.gz $m >> $O/t82.txt 2>&1; done
for m in eagerA owngraph; do CUDA_MODULE_LOADING=EAGER timeout 100 python3 .dev/twoprobe2.py /tmp/t82.pb.gz $m 2>&1 | sed 's/^/EAGERLOAD /' >> $O/t82.txt; done
cat $O/*.txt
cd $OUT && tar czf u.tgz u && rm -rf u
