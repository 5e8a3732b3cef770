#!/usr/bin/env bash
# Issue 11, eleventh stop, second call: the per-process spread. The host's CPU/NUMA layout, then
# variance.py (4 backends a process, each after a pad allocation) in 3 processes, then 2 more
# processes pinned to the GPU's NUMA-local CPUs (taskset), then the peer twice.
#   C=<commit> bash docs/gpu_check/residual_prio/device_command2.sh
set -u
R=$OUT/r; mkdir -p $R; D=docs/gpu_check
mkdir -p /tmp/site && tar -xJf .whl/numba312.tar.xz -C /tmp/site
SITE=/tmp/site:$PWD/.whl/site
export NUMBA_CACHE_DIR=/tmp/nbcache PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/kc PYTHONPATH=$SITE:$PWD
L=$R/variance.log
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader; date -u; echo "tree ${C:-?}"
  nvidia-smi topo -m; lscpu | grep -i "numa\|model name\|^cpu(s)"; taskset -p $$; } >$L 2>&1
f=/tmp/res-20x256.pb.gz
python3 -m lc0py make-net --preset res-20x256 -o $f >/dev/null 2>&1
for r in 1 2 3; do echo "=== process $r" >>$L; timeout 150 python3 $D/residual_prio/variance.py $f 4 >>$L 2>>$R/err; done
cpus=$(nvidia-smi topo -m 2>/dev/null | awk '$1=="GPU0"{for(i=2;i<=NF;i++) if ($i ~ /^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$/ && $i ~ /-/) {print $i; exit}}')
echo "GPU0 CPU affinity: '$cpus'" >>$L
for r in 1 2; do echo "=== pinned process $r" >>$L; timeout 150 taskset -c ${cpus:-0-7} python3 $D/residual_prio/variance.py $f 2 >>$L 2>>$R/err; done
for r in 1 2; do timeout 200 python3 scripts/compare/peer_torch.py --weights $f --sizes 256,1024 2>>$R/peer.err >>$L; done
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv >>$L 2>&1
date -u >>$L
