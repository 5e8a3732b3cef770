#!/usr/bin/env bash
# stop 30, call 2 (2 GPUs): T82 search over two GPUs with demux at Threads 2, the three child
# feeding paths (backends.CHILD_FEEDING: resolve = default, threads, caller): timelines and benchmark
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c LC0PY_TUNED_DIR=/tmp/tuned55
O=$OUT/f; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C"; nproc; } > $O/info.txt 2>&1
cp .dev/call55.sh $O/call.sh
N=/tmp/t82.pb.gz
timeout 60 python3 -m lc0py make-net --preset t82 -o $N > /dev/null 2>&1; el make-net
timeout 120 python3 -m lc0py benchmark -w $N -b random --nodes 2000 --num-positions 1 > /dev/null 2>&1; el warm-core
G="backend=cuda-fp16,max_batch=1024,(gpu=0),(gpu=1)"
B="--nodes 20000 --num-positions 6"
bench() {  # feeding round
  if [ $1 = one ]; then
    timeout 75 python3 -m lc0py benchmark -w $N -b cuda-fp16 -o max_batch=1024 $B
  else
    timeout 75 python3 -c "import sys; import lc0py.backends.multi.backends as b; b.CHILD_FEEDING = sys.argv[1]; from lc0py.cli.main import main; sys.exit(main(sys.argv[2:]))" $1 benchmark -w $N -b demux -o "$G" --threads 2 $B
  fi > $O/bench_$1_$2.txt 2>>$O/err.txt
  echo "$1 $2 $(grep -i 'nodes/s' $O/bench_$1_$2.txt | tail -1)" >> $O/info.txt
}
for r in 1 2; do
  case $r in 1) order="one resolve caller threads";; 2) order="threads caller resolve one";; esac
  for v in $order; do bench $v $r; done
  for v in resolve caller threads; do
    timeout 90 python3 scripts/bench/search_timeline.py -w $N -b demux -o "$G" --threads 2 --child-feeding $v --nodes 20000 --positions 3 > $O/tl_${v}_$r.txt 2>>$O/err.txt
    echo "tl $v $r $(grep '^counted' $O/tl_${v}_$r.txt)" >> $O/info.txt
  done
  el round $r
done
cd $OUT && tar czf f.tgz f && rm -rf f
