#!/usr/bin/env bash
# Baseline (before issue 26's host work): search timeline on the GPU + both engines' benchmark.
set -u
export PYTHONPATH=$PWD/.dev/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/lc0py-kernels
LC0=$PWD/.dev/lc0-cuda/lc0-on-device
O=$OUT; N=$PWD/.dev/nets
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; git log -1 --format=%H 2>/dev/null; } > $O/info.txt
python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1
python3 -m lc0py make-net --preset res-20x256 -o /tmp/res.pb.gz > /dev/null 2>&1
for net in $N/meangirl-8.pb.gz /tmp/t82.pb.gz; do
  b=$(basename $net .pb.gz)
  echo "=== timeline $b"
  timeout 150 python3 scripts/search_timeline.py -w $net -b cuda-fp16 --minibatch-size 0 --nodes 20000 --positions 3 > $O/timeline_$b.txt 2>&1
  tail -25 $O/timeline_$b.txt
done
for net in $N/meangirl-8.pb.gz $N/maia-1900.pb.gz /tmp/res.pb.gz; do
  b=$(basename $net .pb.gz)
  echo "=== benchmark $b"
  timeout 100 python3 -m lc0py benchmark -w $net -b cuda-fp16 --nodes 20000 --num-positions 6 > $O/bench_lc0py_$b.txt 2>&1; grep -i "nodes/second\|nps" $O/bench_lc0py_$b.txt | tail -2
  timeout 60 $LC0 benchmark --weights=$net --backend=cuda-fp16 --nodes=20000 --num-positions=6 > $O/bench_lc0_$b.txt 2>&1; grep -i "nodes/second\|nps" $O/bench_lc0_$b.txt | tail -2
done
