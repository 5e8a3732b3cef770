#!/usr/bin/env bash
# stop 30, call 3 (2 GPUs): confirmation, 4 rounds: one GPU, demux auto (Threads 0 = 3),
# demux Threads 2 with the resolve (default) and caller child feeding
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c LC0PY_TUNED_DIR=/tmp/tuned56
O=$OUT/g; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C"; nproc; } > $O/info.txt 2>&1
cp .dev/call56.sh $O/call.sh
N=/tmp/t82.pb.gz
timeout 60 python3 -m lc0py make-net --preset t82 -o $N > /dev/null 2>&1; el make-net
timeout 120 python3 -m lc0py benchmark -w $N -b random --nodes 2000 --num-positions 1 > /dev/null 2>&1; el warm-core
G="backend=cuda-fp16,max_batch=1024,(gpu=0),(gpu=1)"
B="--nodes 20000 --num-positions 6"
bench() {  # variant round
  case $1 in
    one) timeout 75 python3 -m lc0py benchmark -w $N -b cuda-fp16 -o max_batch=1024 $B ;;
    auto) timeout 75 python3 -m lc0py benchmark -w $N -b demux -o "$G" $B ;;
    *) timeout 75 python3 -c "import sys; import lc0py.backends.multi.backends as b; b.CHILD_FEEDING = sys.argv[1]; from lc0py.cli.main import main; sys.exit(main(sys.argv[2:]))" $1 benchmark -w $N -b demux -o "$G" --threads 2 $B ;;
  esac > $O/bench_$1_$2.txt 2>>$O/err.txt
  echo "$1 $2 $(grep -i 'nodes/s' $O/bench_$1_$2.txt | tail -1)" >> $O/info.txt
}
for r in 1 2 3 4; do
  case $r in 1) order="one auto resolve caller";; 2) order="caller resolve auto one";; 3) order="resolve one caller auto";; 4) order="auto caller one resolve";; esac
  for v in $order; do bench $v $r; done
  el round $r
done
cd $OUT && tar czf g.tgz g && rm -rf f
