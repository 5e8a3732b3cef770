#!/usr/bin/env bash
# the full GPU test suite on main (final tree), verify on T82 / real nets, host-memory check
set -u
export PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/g; mkdir -p $O; t=$(date +%s)
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "tree $C"; } > $O/info.txt
ln -sfn $PWD/.dev/nets .nets
PYTHONPATH=$PWD/.dev/site:$PWD timeout 420 python3 -m pytest -m gpu -q -p no:cacheprovider tests/backends/gpu tests/api/test_net_gpu.py tests/attention/test_gpu_attention.py tests/gpu > $O/gpu_tests.log 2>&1
echo "gpu tests rc $? at $(date -u) $(( $(date +%s) - t )) s" >> $O/info.txt; tail -3 $O/gpu_tests.log >> $O/info.txt
PYTHONPATH=$PWD/.dev/site:$PWD timeout 90 python3 scripts/device/host_memory_check.py > $O/hostmem.txt 2>&1
echo "hostmem rc $? $(( $(date +%s) - t )) s" >> $O/info.txt
timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1
for w in /tmp/t82.pb.gz .dev/nets/maia-1900.pb.gz .dev/nets/meangirl-8.pb.gz; do
  PYTHONPATH=$PWD/.dev/site:$PWD timeout 90 python3 -m lc0py verify -w $w -b cuda-fp16 >> $O/verify.txt 2>&1; echo "verify $w rc $?" >> $O/info.txt
done
echo "done $(( $(date +%s) - t )) s" >> $O/info.txt
cd $OUT && tar czf g.tgz g && rm -rf g
