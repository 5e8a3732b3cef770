#!/usr/bin/env bash
# stop 30, call 8 (2 GPUs): why roundrobin at Threads 2 searches as fast as one GPU: timelines
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c LC0PY_TUNED_DIR=/tmp/tuned61
O=$OUT/r; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C"; } > $O/info.txt 2>&1
cp .dev/call61.sh $O/call.sh
N=/tmp/t82.pb.gz
timeout 60 python3 -m lc0py make-net --preset t82 -o $N > /dev/null 2>&1; el make-net
timeout 120 python3 -m lc0py benchmark -w $N -b random --nodes 2000 --num-positions 1 > /dev/null 2>&1; el warm-core
G="backend=cuda-fp16,max_batch=1024,(gpu=0),(gpu=1)"
for v in "rr 2 resolve" "rr 2 caller" "rr 0 resolve" "demux 0 auto"; do
  set -- $v
  b=$1; [ $b = rr ] && b=roundrobin
  timeout 80 python3 scripts/bench/search_timeline.py -w $N -b $b -o "$G" --threads $2 --child-feeding $3 --nodes 20000 --positions 3 > $O/tl_$1_t$2_$3.txt 2>>$O/err.txt
  echo "tl $v $(grep '^counted' $O/tl_$1_t$2_$3.txt)" >> $O/info.txt
done
el done
cd $OUT && tar czf r.tgz r && rm -rf r
