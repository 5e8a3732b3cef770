#!/usr/bin/env bash
# issue 27: demux's minimum-split-size for the search's small batches (2 GPUs), lc0 in the same call;
# issue 28: batch-1..16 latency of T82 fp16
set -u
export PYTHONPATH=$PWD/.dev/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/m; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C"; nproc; } > $O/info.txt 2>&1
timeout 90 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > $O/makenet.txt 2>&1; el make-net
python3 -c "from lc0py.search.warmup import warm_up; print(f'core {warm_up():.1f} s')" > $O/warm.txt 2>&1; el warm
timeout 120 python3 -m lc0py backendbench -w /tmp/t82.pb.gz -b cuda-fp16 -o max_batch=1024 --batch-sizes 1,2,4,8,16,32,64 --batches 200 --json > $O/bb_small.jsonl 2> $O/bb_small.err; el bb_small
L=.dev/lc0-cuda/lc0-on-device
G="(backend=cuda-fp16,gpu=0),(backend=cuda-fp16,gpu=1)"
timeout 40 $L benchmark --weights=/tmp/t82.pb.gz --backend=cuda-fp16 --nodes=20000 --num-positions=6 > $O/lc0_1gpu.txt 2>&1
timeout 40 $L benchmark --weights=/tmp/t82.pb.gz --backend=roundrobin "--backend-opts=$G" --nodes=20000 --num-positions=6 > $O/lc0_roundrobin.txt 2>&1
timeout 40 $L benchmark --weights=/tmp/t82.pb.gz --backend=demux "--backend-opts=$G" --nodes=20000 --num-positions=6 > $O/lc0_demux.txt 2>&1
for f in 1gpu roundrobin demux; do echo "lc0 $f: $(grep -i 'nodes/second' $O/lc0_$f.txt)" >> $O/summary.txt; done
el lc0
BO="max_batch=1024"; G2="(gpu=0),(gpu=1)"; B="--nodes 20000 --num-positions 6"
run() { local name=$1; shift; timeout 60 python3 -m lc0py benchmark -w /tmp/t82.pb.gz "$@" $B > $O/bench_$name.txt 2>&1; echo "lc0py $name: $(grep -i 'nodes/second' $O/bench_$name.txt)" >> $O/summary.txt; }
for r in 1 2; do
  run 1gpu_$r -b cuda-fp16 -o $BO
  run demux_$r -b demux -o "backend=cuda-fp16,$BO,$G2"
  run demux_ms48_$r -b demux -o "backend=cuda-fp16,$BO,minimum-split-size=48,$G2"
  run demux_ms96_$r -b demux -o "backend=cuda-fp16,$BO,minimum-split-size=96,$G2"
  run demux_ms192_$r -b demux -o "backend=cuda-fp16,$BO,minimum-split-size=192,$G2"
  run rr_$r -b roundrobin -o "backend=cuda-fp16,$BO,$G2"
done
el lc0py
timeout 60 python3 scripts/bench/search_timeline.py -w /tmp/t82.pb.gz -b demux -o "backend=cuda-fp16,$BO,minimum-split-size=96,$G2" --minibatch-size 0 --nodes 20000 --positions 3 --skip 1 > $O/tl_demux_ms96.txt 2>&1
el timeline
cd $OUT && tar czf m.tgz m && rm -rf m
