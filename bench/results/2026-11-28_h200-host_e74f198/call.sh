#!/usr/bin/env bash
# stop 20, call 1: host speed probes on the device host: CPU, cgroup, Python/numpy/numba loops,
# lc0 random backend (1 thread no task workers / defaults) against lc0py random, alternating
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/h; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; nproc; python3 -c "import os; print(os.cpu_count(), len(os.sched_getaffinity(0)))"; cat /sys/fs/cgroup/cpu.max; cat /sys/kernel/mm/transparent_hugepage/enabled; } > $O/info.txt 2>&1
lscpu > $O/lscpu.txt 2>&1; grep MHz /proc/cpuinfo | sort | uniq -c | head -20 > $O/mhz.txt
cp .dev/call37.sh $O/call.sh
python3 .dev/pybench.py > $O/pybench.txt 2>&1; el pybench
L=.dev/lc0-cuda/lc0-on-device
timeout 200 python3 -m lc0py benchmark --backend random --nodes 2000 --num-positions 1 > $O/compile.txt 2>&1; el compile
for r in 1 2 3; do
  timeout 60 $L benchmark --backend=random --nodes=20000 --num-positions=6 --threads=1 --task-workers=0 2>&1 | grep -E "Nodes/second" | sed "s/^/lc0_t1 /" >> $O/runs.txt
  timeout 60 $L benchmark --backend=random --nodes=20000 --num-positions=6 2>&1 | grep -E "Nodes/second" | sed "s/^/lc0_default /" >> $O/runs.txt
  timeout 60 python3 -m lc0py benchmark --backend random --nodes 20000 --num-positions 6 2>&1 | grep -E "Nodes/second" | sed "s/^/lc0py /" >> $O/runs.txt
  timeout 60 taskset -c 2,3 python3 -m lc0py benchmark --backend random --nodes 20000 --num-positions 6 2>&1 | grep -E "Nodes/second" | sed "s/^/lc0py_pin23 /" >> $O/runs.txt
  timeout 60 taskset -c 2 $L benchmark --backend=random --nodes=20000 --num-positions=6 --threads=1 --task-workers=0 2>&1 | grep -E "Nodes/second" | sed "s/^/lc0_t1_pin2 /" >> $O/runs.txt
done; el runs
cd $OUT && tar czf h.tgz h && rm -rf h
