#!/usr/bin/env bash
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/b; mkdir -p $O
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C"; } > $O/info.txt 2>&1
cp .dev/call18.sh .dev/bisect.py $O/
[ -f /tmp/t82.pb.gz ] || timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1
for m in torch eager2 eager1x; do timeout 100 python3 .dev/bisect.py /tmp/t82.pb.gz $m >> $O/t82.txt 2>&1; done
cat $O/*.txt | grep -v Warn
cd $OUT && tar czf b.tgz b && rm -rf b
