#!/usr/bin/env bash
# Final tree on the GPU: GPU tests, verify, backendbench A/B (2 rounds) against 2d53e2a.
set -u
export PYTHONPATH=$PWD/.dev/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/lc0py-kernels
O=${OUT:-/tmp/final}; mkdir -p $O
ln -sfn $PWD/.dev/nets .nets
echo "=== GPU tests $(date -u +%T)"
timeout 280 python3 -m pytest -m gpu -p no:cacheprovider tests/backends/gpu tests/gpu tests/attention tests/api/test_net_gpu.py > $O/gpu_tests.log 2>&1; echo "rc $?"; tail -2 $O/gpu_tests.log
echo "=== verify $(date -u +%T)"
for p in t82 res-20x256; do for b in cuda-fp16 cuda; do
  timeout 60 python3 -m lc0py verify --preset $p --backend $b --batch 8 --seed 13 2>&1 | tail -1 | sed "s/^/$p $b: /" | tee -a $O/verify.log
done; done
for n in maia-1900 meangirl-8; do timeout 60 python3 -m lc0py verify -w .dev/nets/$n.pb.gz --backend cuda-fp16 --batch 8 --seed 13 2>&1 | tail -1 | sed "s/^/$n cuda-fp16: /" | tee -a $O/verify.log; done
echo "=== A/B $(date -u +%T)"
python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz >/dev/null 2>&1; python3 -m lc0py make-net --preset res-20x256 -o /tmp/res-20x256.pb.gz >/dev/null 2>&1
mkdir -p /tmp/old && git archive 2d53e2a lc0py kernels | tar -x -C /tmp/old
ROUNDS=2 OUT=$O/ab_t82 timeout 150 scripts/device/gpu_ab /tmp/old 64,256,1024 2>&1 | tail -4
PRESET=res-20x256 ROUNDS=2 OUT=$O/ab_res timeout 120 scripts/device/gpu_ab /tmp/old 64,256,1024 2>&1 | tail -4
echo "=== done $(date -u +%T)"
