#!/usr/bin/env bash
# stop 21, call 6 (2 GPUs): benchmark (search, T82, defaults) on one GPU against demux over two,
# pdl on (the default), 3 alternating rounds
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/s; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C"; nproc; } > $O/info.txt 2>&1
cp .dev/call47.sh $O/call.sh
timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1; el make-net
timeout 120 python3 -m lc0py benchmark -w /tmp/t82.pb.gz -b random --nodes 2000 --num-positions 1 > /dev/null 2>&1; el warm-core
B="--nodes 20000 --num-positions 6"
for r in 1 2 3; do
  if [ $((r % 2)) = 1 ]; then order="one demux"; else order="demux one"; fi
  for v in $order; do
    if [ $v = one ]; then
      timeout 75 python3 -m lc0py benchmark -w /tmp/t82.pb.gz -b cuda-fp16 -o max_batch=1024 $B > $O/bench_${v}_$r.txt 2>>$O/err.txt
    else
      timeout 75 python3 -m lc0py benchmark -w /tmp/t82.pb.gz -b demux -o "backend=cuda-fp16,max_batch=1024,(gpu=0),(gpu=1)" $B > $O/bench_${v}_$r.txt 2>>$O/err.txt
    fi
    echo "$v $r $(grep -i 'nodes/s\|nps' $O/bench_${v}_$r.txt | tail -1)" >> $O/info.txt
  done
  el round $r
done
cd $OUT && tar czf s.tgz s && rm -rf s
