#!/usr/bin/env bash
# issue 26 diagnosis: how the search thread's host runs on the device host (CPU topology, CUDA
# context scheduling, lc0 single-threaded), and the fp8-calibration memory question (issue 28)
set -u
export PYTHONPATH=$PWD/.dev/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/d; mkdir -p $O
t=$(date +%s)
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "tree $C"; nproc; lscpu; python3 -c "import numba, numpy; print('numba', numba.__version__, 'numpy', numpy.__version__)"; } > $O/info.txt 2>&1
M=.dev/nets/maia-1900.pb.gz
# 1. fp8 calibration: host memory damaged by residual FP8? (branch tree in .dev/fp8cal)
(cd .dev/fp8cal && PYTHONPATH=$PWD/../site:$PWD timeout 60 python3 scripts/device/fp8_memory_check.py) > $O/fp8_memory.txt 2>&1
echo "fp8 memory rc $? $(( $(date +%s) - t )) s" >> $O/info.txt
python3 -c "from lc0py.search.warmup import warm_up; print(f'core {warm_up():.1f} s')" > $O/warm.txt 2>&1
echo "warm $(( $(date +%s) - t )) s" >> $O/info.txt
# 2. CUDA context scheduling x 2 alternating rounds (benchmark maia-1900, cuda-fp16, defaults)
for r in 1 2; do for s in auto spin yield blocking; do
  LC0PY_CUDA_SCHED=$s timeout 30 python3 -m lc0py benchmark -w $M -b cuda-fp16 --nodes 20000 --num-positions 6 > $O/bench_${s}_$r.txt 2>&1
  echo "$s $r: $(grep -i 'nodes/second' $O/bench_${s}_$r.txt)" >> $O/sched.txt
done; done
echo "sched done $(( $(date +%s) - t )) s" >> $O/info.txt
# 3. lc0: defaults, one search thread, one thread and no task workers
L=.dev/lc0-cuda/lc0-on-device
timeout 25 $L benchmark --weights=$M --backend=cuda-fp16 --nodes=20000 --num-positions=6 > $O/lc0_default.txt 2>&1
timeout 25 $L benchmark --weights=$M --backend=cuda-fp16 --nodes=20000 --num-positions=6 --threads=1 > $O/lc0_t1.txt 2>&1
timeout 25 $L benchmark --weights=$M --backend=cuda-fp16 --nodes=20000 --num-positions=6 --threads=1 --task-workers=0 > $O/lc0_t1_tw0.txt 2>&1
timeout 25 $L benchmark --weights=$M --backend=cuda-fp16 --nodes=20000 --num-positions=6 --task-workers=0 > $O/lc0_tw0.txt 2>&1
for f in default t1 t1_tw0 tw0; do echo "lc0 $f: $(grep -i 'nodes/second' $O/lc0_$f.txt)" >> $O/sched.txt; done
echo "lc0 done $(( $(date +%s) - t )) s" >> $O/info.txt
# 4. the search thread's host: simulated device on this host's CPU vs the real one
timeout 40 python3 scripts/bench/search_timeline.py -w $M -b sim-gpu --delay-ms 0.25 --nodes 20000 --positions 3 --skip 1 > $O/tl_sim.txt 2>&1
timeout 40 python3 scripts/bench/search_timeline.py -w $M -b cuda-fp16 --nodes 20000 --positions 3 --skip 1 > $O/tl_cuda.txt 2>&1
LC0PY_CUDA_SCHED=blocking timeout 40 python3 scripts/bench/search_timeline.py -w $M -b cuda-fp16 --nodes 20000 --positions 3 --skip 1 > $O/tl_cuda_blocking.txt 2>&1
timeout 40 python3 scripts/bench/search_timeline.py -w $M -b random --nodes 20000 --positions 3 --skip 1 > $O/tl_random.txt 2>&1
echo "rc $? at $(date -u), $(( $(date +%s) - t )) s" >> $O/info.txt
cd $OUT && tar czf d.tgz d && rm -rf d
