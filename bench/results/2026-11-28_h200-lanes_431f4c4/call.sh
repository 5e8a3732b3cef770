#!/usr/bin/env bash
# stop 17, call 2: two batches at once on ONE GPU. roundrobin / demux with two children on gpu 0
# (each child its own streams, cuBLAS handle, buffers, graphs) against one cuda-fp16 backend;
# lc0 0.32.1 with and without its cuda multi_stream option, same call.
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/m; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C"; nproc; } > $O/info.txt 2>&1
for p in t82 res-20x256; do timeout 90 python3 -m lc0py make-net --preset $p -o /tmp/$p.pb.gz >> $O/makenet.txt 2>&1; done; el make-net
python3 -c "from lc0py.search.warmup import warm_up; print(f'core {warm_up():.1f} s')" > $O/warm.txt 2>&1; el warm
G2="(gpu=0),(gpu=0)"
BB="--batch-sizes 1,16,32,64,128,256 --batches 200 --json"
timeout 100 python3 -m lc0py backendbench -w /tmp/t82.pb.gz -b cuda-fp16 $BB --in-flight 2 > $O/bb_one.jsonl 2>$O/bb_one.err; el bb_one
timeout 100 python3 -m lc0py backendbench -w /tmp/t82.pb.gz -b roundrobin -o "backend=cuda-fp16,$G2" $BB > $O/bb_rr.jsonl 2>$O/bb_rr.err; el bb_rr
L=.dev/lc0-cuda/lc0-on-device
B="--nodes 20000 --num-positions 6"
run() { local name=$1; shift; timeout 60 python3 -m lc0py benchmark "$@" $B > $O/bench_$name.txt 2>&1; echo "lc0py $name: $(grep -i 'nodes/second' $O/bench_$name.txt)" >> $O/summary.txt; }
lrun() { local name=$1; shift; timeout 60 $L benchmark --nodes=20000 --num-positions=6 "$@" > $O/lc0_$name.txt 2>&1; echo "lc0 $name: $(grep -i 'nodes/second' $O/lc0_$name.txt)" >> $O/summary.txt; }
for r in 1 2; do
  run t82_one_$r -w /tmp/t82.pb.gz -b cuda-fp16
  run t82_rr_$r -w /tmp/t82.pb.gz -b roundrobin -o "backend=cuda-fp16,$G2"
  run t82_demux_$r -w /tmp/t82.pb.gz -b demux -o "backend=cuda-fp16,$G2"
  run t82_rr_t3_$r -w /tmp/t82.pb.gz -b roundrobin -o "backend=cuda-fp16,$G2" -t 3
  lrun t82_$r --weights=/tmp/t82.pb.gz --backend=cuda-fp16
  lrun t82_ms_$r --weights=/tmp/t82.pb.gz --backend=cuda-fp16 --backend-opts=multi_stream=true
  el round $r
done
run res_one -w /tmp/res-20x256.pb.gz -b cuda-fp16
run res_rr -w /tmp/res-20x256.pb.gz -b roundrobin -o "backend=cuda-fp16,$G2"
lrun res --weights=/tmp/res-20x256.pb.gz --backend=cuda-fp16
lrun res_ms --weights=/tmp/res-20x256.pb.gz --backend=cuda-fp16 --backend-opts=multi_stream=true
el res
timeout 60 python3 scripts/bench/search_timeline.py -w /tmp/t82.pb.gz -b roundrobin -o "backend=cuda-fp16,$G2" --minibatch-size 0 --nodes 20000 --positions 3 --skip 1 > $O/tl_rr.txt 2>&1
el timeline
cd $OUT && tar czf m.tgz m && rm -rf m
