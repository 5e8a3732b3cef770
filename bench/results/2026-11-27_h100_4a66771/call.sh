#!/usr/bin/env bash
# issue 26 diagnostics: device CPU factor, host timeline with pick kinds, py-spy of the search thread,
# backendbench at small batches, lc0 reference; one H100
set -u
O=$OUT/p; mkdir -p $O
export PYTHONPATH=$PWD/.dev/site:$PWD PYTHONUNBUFFERED=1 LC0PY_CACHE_DIR=/tmp/lc0py-cache LC0PY_KERNEL_CACHE=/tmp/lc0py-k
NET=.dev/nets/meangirl-8.pb.gz
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; lscpu | grep -i "model name"; uptime; echo commit $C; } > $O/info.txt 2>&1
python3 -c "from lc0py.search.warmup import warm_up; print(warm_up())" > $O/warm.txt 2>&1
TL="python3 scripts/bench/search_timeline.py"
$TL -w $NET -b sim-gpu --delay-ms 0.3 --delay-per-position-us 1 --minibatch-size 0 > $O/tl_sim_meangirl.txt 2>&1
$TL -w $NET -b random --minibatch-size 0 > $O/tl_random_meangirl.txt 2>&1
$TL -w $NET -b cuda-fp16 --minibatch-size 0 > $O/tl_cuda_meangirl.txt 2>&1
$TL -w .dev/nets/maia-1900.pb.gz -b cuda-fp16 --minibatch-size 0 > $O/tl_cuda_maia.txt 2>&1
.dev/py-spy record -r 400 -f raw --threads -o $O/pyspy_cuda_meangirl.txt -- $TL -w $NET -b cuda-fp16 --minibatch-size 0 > $O/tl_cuda_meangirl_spy.txt 2>&1
.dev/py-spy record -r 400 -f raw --threads --native -o $O/pyspy_native_meangirl.txt -- $TL -w $NET -b cuda-fp16 --minibatch-size 0 > $O/tl_cuda_meangirl_spyn.txt 2>&1
python3 -m lc0py backendbench -w $NET -b cuda-fp16 --batch-sizes 8,16,32,48,64,96,128,192,256 --batches 200 > $O/bb_meangirl.txt 2>&1
python3 -m lc0py backendbench -w .dev/nets/maia-1900.pb.gz -b cuda-fp16 --batch-sizes 8,16,32,48,64,96,128,192,256 --batches 200 > $O/bb_maia.txt 2>&1
python3 -m lc0py benchmark -w $NET -b cuda-fp16 > $O/bench_lc0py_meangirl.txt 2>&1
.dev/lc0-cuda/lc0-on-device benchmark --weights=$NET --backend=cuda-fp16 > $O/bench_lc0_meangirl.txt 2>&1
.dev/lc0-cuda/lc0-on-device backendbench --weights=$NET --backend=cuda-fp16 --batches=200 --max-batch-size=256 --batch-step=16 > $O/bb_lc0_meangirl.txt 2>&1
uptime >> $O/info.txt
cd $OUT && tar czf p.tgz p && rm -rf p
