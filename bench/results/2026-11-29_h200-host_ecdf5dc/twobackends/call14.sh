#!/usr/bin/env bash
# why a T82 pass at one position takes ~0.63 ms alone in a process and ~0.70 beside a second backend
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/t; mkdir -p $O
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C"; } > $O/info.txt 2>&1
cp .dev/call14.sh .dev/twoprobe.py $O/
[ -f /tmp/t82.pb.gz ] || timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1
timeout 200 python3 .dev/twoprobe.py /tmp/t82.pb.gz > $O/t82.txt 2>&1
timeout 100 python3 .dev/twoprobe.py .nets/maia-1900.pb.gz > $O/maia.txt 2>&1
cat $O/*.txt
cd $OUT && tar czf t.tgz t && rm -rf t
