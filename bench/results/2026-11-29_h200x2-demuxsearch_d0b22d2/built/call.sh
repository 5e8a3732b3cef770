#!/usr/bin/env bash
# stop 30, call 4 (2 GPUs): the built defaults (demux: Threads auto = 2, small batches joined on the
# caller's thread) against the old ones (Threads 3, resolve) and one GPU, T82 benchmark, 3 rounds;
# backendbench demux scaling; a timeline of the default demux search
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c LC0PY_TUNED_DIR=/tmp/tuned57
O=$OUT/c; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C"; nproc; } > $O/info.txt 2>&1
cp .dev/call57.sh $O/call.sh
N=/tmp/t82.pb.gz
timeout 60 python3 -m lc0py make-net --preset t82 -o $N > /dev/null 2>&1; el make-net
timeout 120 python3 -m lc0py benchmark -w $N -b random --nodes 2000 --num-positions 1 > /dev/null 2>&1; el warm-core
G="backend=cuda-fp16,max_batch=1024,(gpu=0),(gpu=1)"
timeout 100 python3 -m lc0py backendbench -w $N -b cuda-fp16 -o max_batch=1024 --batch-sizes 256,1024 --in-flight 2 --batches 60 --json > $O/bb_1gpu_if2.jsonl 2>>$O/err.txt; el bb1
timeout 150 python3 -m lc0py backendbench -w $N -b demux -o "$G" --batch-sizes 512,2048 --batches 60 --json > $O/bb_demux.jsonl 2>>$O/err.txt; el bbdemux
B="--nodes 20000 --num-positions 6"
bench() {  # variant round
  case $1 in
    one) timeout 75 python3 -m lc0py benchmark -w $N -b cuda-fp16 -o max_batch=1024 $B ;;
    new) timeout 75 python3 -m lc0py benchmark -w $N -b demux -o "$G" $B ;;
    old) timeout 75 python3 -c "import sys; import lc0py.backends.multi.backends as b; b.CHILD_FEEDING = 'resolve'; from lc0py.cli.main import main; sys.exit(main(sys.argv[1:]))" benchmark -w $N -b demux -o "$G" --threads 3 $B ;;
  esac > $O/bench_$1_$2.txt 2>>$O/err.txt
  echo "$1 $2 $(grep -i 'nodes/s' $O/bench_$1_$2.txt | tail -1)" >> $O/info.txt
}
for r in 1 2 3; do
  case $r in 1) order="one new old";; 2) order="old one new";; 3) order="new old one";; esac
  for v in $order; do bench $v $r; done
  el round $r
done
timeout 90 python3 scripts/bench/search_timeline.py -w $N -b demux -o "$G" --nodes 20000 --positions 3 > $O/tl_new.txt 2>>$O/err.txt; el tl
cd $OUT && tar czf c.tgz c && rm -rf c
