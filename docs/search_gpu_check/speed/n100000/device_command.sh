#!/usr/bin/env bash
set -u
R=$OUT/r; mkdir -p $R
mkdir -p /tmp/site && tar -xJf .whl/numba312.tar.xz -C /tmp/site
export PYTHONPATH=/tmp/site:$PWD/.whl/site:$PWD NUMBA_CACHE_DIR=/tmp/nbcache PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/lc0py-kernels
export GPU_CHECK_COMMIT=${C:-unknown}
python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz >/dev/null 2>&1
python3 -c "from lc0py.search.warmup import warm_up; warm_up()" >/dev/null 2>&1
for n in 100000; do for mb in 256 1024; do
  OUT=$R/n${n}_mb$mb MB=$mb NODES=$n NET=/tmp/t82.pb.gz timeout 250 scripts/device/search_gpu_check >$R/n${n}_mb$mb.log 2>&1
  tail -2 $R/n${n}_mb$mb.log
done; done
tar -czf $OUT/big.tgz -C $OUT r
