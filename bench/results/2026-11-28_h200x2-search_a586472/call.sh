#!/usr/bin/env bash
# issue 27: lc0's own 2-GPU search scaling, lc0py's 2-GPU search at several Threads with timelines;
# the host's per-node CPU cost (gather_cost) for comparison with the dev machine; memory-lifetime GPU tests
set -u
export PYTHONPATH=$PWD/.dev/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/s; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C"; nproc; lscpu | head -20; } > $O/info.txt 2>&1
timeout 90 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > $O/makenet.txt 2>&1; el make-net
python3 -c "from lc0py.search.warmup import warm_up; print(f'core {warm_up():.1f} s')" > $O/warm.txt 2>&1; el warm
M=.dev/nets/maia-1900.pb.gz
timeout 90 python3 scripts/bench/gather_cost.py --nodes 6000 --positions 3 --backend numpy -w $M > $O/gather_cost.txt 2>&1; el gather_cost
L=.dev/lc0-cuda/lc0-on-device
G="(backend=cuda-fp16,gpu=0),(backend=cuda-fp16,gpu=1)"
timeout 40 $L benchmark --weights=/tmp/t82.pb.gz --backend=cuda-fp16 --nodes=20000 --num-positions=6 > $O/lc0_1gpu.txt 2>&1
for b in demux roundrobin multiplexing; do
  timeout 40 $L benchmark --weights=/tmp/t82.pb.gz --backend=$b "--backend-opts=$G" --nodes=20000 --num-positions=6 > $O/lc0_$b.txt 2>&1
done
for f in 1gpu demux roundrobin multiplexing; do echo "lc0 $f: $(grep -i 'nodes/second' $O/lc0_$f.txt)" >> $O/summary.txt; done
el lc0
BO="max_batch=1024"; G2="(gpu=0),(gpu=1)"
B="--nodes 20000 --num-positions 6"
run() { local name=$1; shift; timeout 60 python3 -m lc0py benchmark -w /tmp/t82.pb.gz "$@" $B > $O/bench_$name.txt 2>&1; echo "lc0py $name: $(grep -i 'nodes/second' $O/bench_$name.txt)" >> $O/summary.txt; }
run 1gpu -b cuda-fp16 -o $BO
for r in 1 2; do
  run demux_t0_$r -b demux -o "backend=cuda-fp16,$BO,$G2"
  run rr_t0_$r -b roundrobin -o "backend=cuda-fp16,$BO,$G2"
  run rr_t4_$r -b roundrobin -o "backend=cuda-fp16,$BO,$G2" -t 4
  run demux_t4_$r -b demux -o "backend=cuda-fp16,$BO,$G2" -t 4
done
run rr_t6 -b roundrobin -o "backend=cuda-fp16,$BO,$G2" -t 6
run 1gpu_b -b cuda-fp16 -o $BO
el lc0py
timeout 60 python3 scripts/bench/search_timeline.py -w /tmp/t82.pb.gz -b cuda-fp16 -o $BO --minibatch-size 0 --nodes 20000 --positions 3 --skip 1 > $O/tl_1gpu.txt 2>&1
timeout 60 python3 scripts/bench/search_timeline.py -w /tmp/t82.pb.gz -b demux -o "backend=cuda-fp16,$BO,$G2" --minibatch-size 0 --nodes 20000 --positions 3 --skip 1 > $O/tl_demux.txt 2>&1
timeout 60 python3 scripts/bench/search_timeline.py -w /tmp/t82.pb.gz -b roundrobin -o "backend=cuda-fp16,$BO,$G2" --minibatch-size 0 --threads 4 --nodes 20000 --positions 3 --skip 1 > $O/tl_rr_t4.txt 2>&1
el timelines
timeout 120 python3 -m pytest -q -x tests/backends/gpu/test_host_memory_gpu.py > $O/tests_host_memory.txt 2>&1; el tests
cd $OUT && tar czf s.tgz s && rm -rf s
