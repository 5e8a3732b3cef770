#!/usr/bin/env bash
# stop 28, call 2: HBM ceiling for the pass's element-wise shapes; T82's kernels under graph replay at 256/1024
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c LC0PY_TUNED_DIR=/tmp/tuned41
O=$OUT/bw; mkdir -p $O
{ date -u; nvidia-smi --query-gpu=index,name,driver_version,clocks.max.mem,clocks.mem --format=csv,noheader; echo "tree $C"; } > $O/info.txt 2>&1
cp .dev/call42.sh .dev/bwprobe.py .dev/kprobe3.py $O/
timeout 120 python3 .dev/bwprobe.py > $O/bw.txt 2>&1; echo "bw rc $?" >> $O/info.txt
[ -f /tmp/t82.pb.gz ] || timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1
for n in 256 1024; do timeout 200 python3 .dev/kprobe3.py /tmp/t82.pb.gz $n "" > $O/graph_$n.txt 2>&1; echo "graph $n rc $?" >> $O/info.txt; done
cat $O/info.txt $O/bw.txt; grep -v Warn $O/graph_*.txt
