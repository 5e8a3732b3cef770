#!/usr/bin/env bash
# issue 10 device call: Threads (minibatches in flight, joined on a busy device) against the GPU.
# backendbench per batch size; per minibatch size: search-only (random) and the search on cuda-fp16
# at Threads 2 (lc0's default for a GPU, lc0py's auto) / 4 / 6; per-batch timelines at MB 256.
set -u
R=$OUT/r; mkdir -p $R
( while sleep 20; do tar -czf $OUT/partial.tgz -C $OUT r 2>/dev/null; done ) &
mkdir -p /tmp/site && tar -xJf .whl/numba312.tar.xz -C /tmp/site
export PYTHONPATH=/tmp/site:$PWD/.whl/site:$PWD NUMBA_CACHE_DIR=/tmp/nbcache PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/lc0py-kernels
L=$R/threads.log
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; echo "tree ${C:-?}; 6 positions x 20000 nodes"; } >$L
N=/tmp/t82.pb.gz
python3 -m lc0py make-net --preset t82 -o $N >>$L 2>&1
python3 -c "from lc0py.search.warmup import warm_up; warm_up()" >>$L 2>&1
echo "=== backendbench cuda-fp16" >>$L
python3 -m lc0py backendbench -w $N -b cuda-fp16 -o max_batch=1024 --batch-sizes 32,64,128,192,256,512,1024 --batches 50 >>$L 2>&1
nps() { grep -o "Nodes/second *: *[0-9]*" | grep -o "[0-9]*$"; }
for MB in 256 64 1024; do
  echo "=== MB $MB: search-only $(python3 -m lc0py benchmark -w $N -b random --minibatch-size $MB --nodes 20000 --num-positions 6 2>/dev/null | nps)" >>$L
  rounds=1; [ $MB = 256 ] && rounds=2
  for r in $(seq $rounds); do for T in 2 4 6; do
    echo "MB $MB threads $T round $r: cuda-fp16 $(python3 -m lc0py benchmark -w $N -b cuda-fp16 -o max_batch=1024 --minibatch-size $MB --threads $T --nodes 20000 --num-positions 6 2>>$R/err.txt | nps)" >>$L
  done; done
  date -u >>$L
done
for T in 2 4 6; do
  echo "=== timeline cuda-fp16 MB 256 threads $T" >>$L
  timeout 60 python3 scripts/bench/search_timeline.py -w $N --backend cuda-fp16 -o max_batch=1024 --minibatch-size 256 --threads $T --positions 4 --nodes 20000 2>&1 | grep -v "playouts.*batches" >>$L
done
echo "=== simulated device MB 256, threads 2 / 4" >>$L
for T in 2 4; do THREADS=$T MB=256 NET=$N OUT=$R/sim$T timeout 120 scripts/bench/search_sim_check | tail -1 | sed "s/^/threads $T: /" >>$L; done
date -u >>$L
kill %1 2>/dev/null; tar -czf $OUT/threads.tgz -C $OUT r; rm -f $OUT/partial.tgz
