#!/usr/bin/env bash
# final device call: GPU tests + search on the GPU (MB 256) + search-only on the host CPU vs lc0
set -u
R=$OUT/r; mkdir -p $R
( while sleep 20; do tar -czf $OUT/partial.tgz -C $OUT r 2>/dev/null; done ) &
mkdir -p /tmp/site && tar -xJf .whl/numba312.tar.xz -C /tmp/site
export PYTHONPATH=/tmp/site:$PWD/.whl/site:$PWD NUMBA_CACHE_DIR=/tmp/nbcache PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/lc0py-kernels
export GPU_CHECK_COMMIT=${C:-unknown}
L=$R/final.log
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; echo "commit $GPU_CHECK_COMMIT"; } >$L
echo "=== GPU tests" >>$L
timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/backends/gpu tests/api/test_net_gpu.py tests/attention/test_gpu_attention.py 2>&1 | tail -3 >>$L
date -u >>$L
[ -f /tmp/t82.pb.gz ] || python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz >>$L 2>&1
python3 -c "from lc0py.search.warmup import warm_up; warm_up()" >>$L 2>&1
echo "=== search-only on the host CPU: lc0py vs lc0 0.32.1, random backend, 20000 nodes x 5 positions, alternated" >>$L
for r in 1 2; do
  echo "--- round $r" >>$L
  python3 -m lc0py benchmark -w /tmp/t82.pb.gz --backend random --nodes 20000 --num-positions 5 --threads 1 2>&1 | grep -i "nodes/s\|nps" | tail -2 | sed 's/^/lc0py default mb: /' >>$L
  .whl/lc0 benchmark --backend=random --threads=1 --nodes=20000 --num-positions=5 2>&1 | grep -i "nodes/second\|nps" | tail -1 | sed 's/^/lc0 default mb: /' >>$L
  python3 -m lc0py benchmark -w /tmp/t82.pb.gz --backend random --nodes 20000 --num-positions 5 --threads 1 --minibatch-size 256 2>&1 | grep -i "nodes/s\|nps" | tail -2 | sed 's/^/lc0py mb256: /' >>$L
  .whl/lc0 benchmark --backend=random --threads=1 --minibatch-size=256 --nodes=20000 --num-positions=5 2>&1 | grep -i "nodes/second\|nps" | tail -1 | sed 's/^/lc0 mb256: /' >>$L
done
date -u >>$L
echo "=== search_gpu_check MB=256" >>$L
OUT=$R/mb256 MB=256 NET=/tmp/t82.pb.gz timeout 300 scripts/device/search_gpu_check >>$L 2>&1
date -u >>$L
kill %1 2>/dev/null; tar -czf $OUT/final.tgz -C $OUT r; rm -f $OUT/partial.tgz
