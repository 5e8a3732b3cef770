#!/usr/bin/env bash
# stop 30, call 1 (2 GPUs): T82 search over two GPUs, demux at 2 minibatches in flight
# (Threads 2) against the auto rule (children + 1 = 3), roundrobin Threads 2, one GPU;
# backendbench demux scaling on the current tree; timelines for the batch sizes
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c LC0PY_TUNED_DIR=/tmp/tuned54
O=$OUT/s; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C"; nproc; lscpu | grep "Model name"; } > $O/info.txt 2>&1
cp .dev/call54.sh $O/call.sh
N=/tmp/t82.pb.gz
timeout 60 python3 -m lc0py make-net --preset t82 -o $N > /dev/null 2>&1; el make-net
timeout 120 python3 -m lc0py benchmark -w $N -b random --nodes 2000 --num-positions 1 > /dev/null 2>&1; el warm-core
G="backend=cuda-fp16,max_batch=1024,(gpu=0),(gpu=1)"
timeout 100 python3 -m lc0py backendbench -w $N -b cuda-fp16 -o max_batch=1024 --batch-sizes 256,1024 --in-flight 2 --batches 60 --json > $O/bb_1gpu_if2.jsonl 2>>$O/err.txt; el bb1
timeout 100 python3 -m lc0py backendbench -w $N -b cuda-fp16 -o max_batch=1024 --batch-sizes 256,1024 --batches 60 --json > $O/bb_1gpu.jsonl 2>>$O/err.txt; el bb1b
timeout 150 python3 -m lc0py backendbench -w $N -b demux -o "$G" --batch-sizes 512,2048 --batches 60 --json > $O/bb_demux.jsonl 2>>$O/err.txt; el bbdemux
B="--nodes 20000 --num-positions 6"
run() {  # variant round
  case $1 in
    one) timeout 75 python3 -m lc0py benchmark -w $N -b cuda-fp16 -o max_batch=1024 $B ;;
    demux3) timeout 75 python3 -m lc0py benchmark -w $N -b demux -o "$G" $B ;;
    demux2) timeout 75 python3 -m lc0py benchmark -w $N -b demux -o "$G" --threads 2 $B ;;
    rr2) timeout 75 python3 -m lc0py benchmark -w $N -b roundrobin -o "$G" --threads 2 $B ;;
  esac > $O/bench_$1_$2.txt 2>>$O/err.txt
  echo "$1 $2 $(grep -i 'nodes/s' $O/bench_$1_$2.txt | tail -1)" >> $O/info.txt
}
for r in 1 2 3; do
  case $r in 1) order="one demux3 demux2 rr2";; 2) order="demux2 rr2 one demux3";; 3) order="rr2 demux3 one demux2";; esac
  for v in $order; do run $v $r; done
  el round $r
done
for th in 2 3; do
  timeout 90 python3 scripts/bench/search_timeline.py -w $N -b demux -o "$G" --threads $th --nodes 20000 --positions 3 > $O/tl_demux_t$th.txt 2>>$O/err.txt; el tl $th
done
timeout 90 python3 scripts/bench/search_timeline.py -w $N -b cuda-fp16 -o max_batch=1024 --nodes 20000 --positions 3 > $O/tl_one.txt 2>>$O/err.txt; el tl one
cd $OUT && tar czf s.tgz s && rm -rf s
