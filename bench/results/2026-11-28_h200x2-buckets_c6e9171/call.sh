#!/usr/bin/env bash
# stop 18, call 1 (2 x GPU): graph_buckets fine (new default) against coarse (the old rule), same call:
# backendbench T82 at the search's batch sizes; benchmark T82 and res-20x256 against lc0; demux over 2 GPUs;
# a T82 timeline (padding shares); the GPU tests that capture graphs.
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/b; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C"; nproc; } > $O/info.txt 2>&1
for p in t82 res-20x256; do timeout 90 python3 -m lc0py make-net --preset $p -o /tmp/$p.pb.gz >> $O/makenet.txt 2>&1; done; el make-net
python3 -c "from lc0py.search.warmup import warm_up; print(f'core {warm_up():.1f} s')" > $O/warm.txt 2>&1; el warm
BB="--batch-sizes 1,9,12,17,24,33,36,40,43,50,64 --batches 200 --json"
for r in 1 2; do
  for m in fine coarse; do
    timeout 100 python3 -m lc0py backendbench -w /tmp/t82.pb.gz -b cuda-fp16 -o graph_buckets=$m $BB > $O/bb_${m}_$r.jsonl 2>$O/bb_${m}_$r.err
  done
  el bb round $r
done
L=.dev/lc0-cuda/lc0-on-device
B="--nodes 20000 --num-positions 6"
run() { local name=$1; shift; timeout 60 python3 -m lc0py benchmark "$@" $B > $O/bench_$name.txt 2>&1; echo "lc0py $name: $(grep -i 'nodes/second' $O/bench_$name.txt)" >> $O/summary.txt; }
lrun() { local name=$1; shift; timeout 60 $L benchmark --nodes=20000 --num-positions=6 "$@" > $O/lc0_$name.txt 2>&1; echo "lc0 $name: $(grep -i 'nodes/second' $O/lc0_$name.txt)" >> $O/summary.txt; }
run warm_t82 -w /tmp/t82.pb.gz -b cuda-fp16 --nodes 300 --num-positions 1
for r in 1 2 3; do
  run t82_fine_$r -w /tmp/t82.pb.gz -b cuda-fp16
  run t82_coarse_$r -w /tmp/t82.pb.gz -b cuda-fp16 -o graph_buckets=coarse
  lrun t82_$r --weights=/tmp/t82.pb.gz --backend=cuda-fp16
  el t82 round $r
done
D0="(backend=cuda-fp16,gpu=0"; D1="(backend=cuda-fp16,gpu=1"
for r in 1 2; do
  [ $(( $(date +%s) - t )) -gt 400 ] && break
  run t82_demux_fine_$r -w /tmp/t82.pb.gz -b demux -o "$D0),$D1)"
  run t82_demux_coarse_$r -w /tmp/t82.pb.gz -b demux -o "$D0,graph_buckets=coarse),$D1,graph_buckets=coarse)"
  run t82_one_$r -w /tmp/t82.pb.gz -b cuda-fp16
  el demux round $r
done
run warm_res -w /tmp/res-20x256.pb.gz -b cuda-fp16 --nodes 300 --num-positions 1
for r in 1 2; do
  [ $(( $(date +%s) - t )) -gt 440 ] && break
  run res_fine_$r -w /tmp/res-20x256.pb.gz -b cuda-fp16
  run res_coarse_$r -w /tmp/res-20x256.pb.gz -b cuda-fp16 -o graph_buckets=coarse
  lrun res_$r --weights=/tmp/res-20x256.pb.gz --backend=cuda-fp16
  el res round $r
done
[ $(( $(date +%s) - t )) -lt 470 ] && timeout 45 python3 scripts/bench/search_timeline.py -w /tmp/t82.pb.gz -b cuda-fp16 --nodes 20000 --positions 3 > $O/tl_t82.txt 2>&1; el timeline
timeout 90 python3 -m pytest -m gpu -q -p no:cacheprovider tests/backends/gpu/test_gpu_backend.py tests/backends/gpu/test_gpu_fusions.py > $O/gpu_tests.log 2>&1
echo "gpu tests rc $?" >> $O/info.txt; tail -2 $O/gpu_tests.log >> $O/info.txt; el tests
cd $OUT && tar czf b.tgz b && rm -rf b
