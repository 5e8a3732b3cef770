#!/usr/bin/env bash
# does a pass's device time depend on the input planes? (graph_replay's random planes vs real positions)
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/d; mkdir -p $O
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C"; } > $O/info.txt 2>&1
cp .dev/call13.sh .dev/dataprobe.py $O/
[ -f /tmp/t82.pb.gz ] || timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1
for n in 1 4 64; do timeout 100 python3 .dev/dataprobe.py /tmp/t82.pb.gz $n 64 >> $O/t82.txt 2>&1; done
timeout 100 python3 .dev/dataprobe.py .nets/maia-1900.pb.gz 1 64 >> $O/maia.txt 2>&1
nvidia-smi --query-gpu=clocks.sm,power.draw --format=csv >> $O/info.txt
cat $O/*.txt
cd $OUT && tar czf d.tgz d && rm -rf d
