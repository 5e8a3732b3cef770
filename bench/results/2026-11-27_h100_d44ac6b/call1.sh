#!/usr/bin/env bash
# Call 1: the GPU runtime refactor (issue 25) on the GPU: GPU tests, verify, backendbench A/B vs 2d53e2a.
set -u
export PYTHONPATH=$PWD/.dev/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/lc0py-kernels
O=$OUT
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; git log -1 --format=%H; date -u; } > $O/info.txt
cat $O/info.txt
ln -sfn $PWD/.dev/nets .nets
echo "=== GPU tests $(date -u +%T)"
timeout 300 python3 -m pytest -m gpu -p no:cacheprovider tests/backends/gpu tests/gpu tests/attention tests/api/test_net_gpu.py > $O/gpu_tests.log 2>&1; echo "rc $?"; tail -3 $O/gpu_tests.log
echo "=== verify $(date -u +%T)"
for p in t82 res-20x256; do for b in cuda-fp16 cuda; do
  timeout 60 python3 -m lc0py verify --preset $p --backend $b --batch 8 --seed 11 2>&1 | tail -2 | tee -a $O/verify.log
done; done
for n in maia-1900 meangirl-8; do timeout 60 python3 -m lc0py verify -w .dev/nets/$n.pb.gz --backend cuda-fp16 --batch 8 --seed 11 2>&1 | tail -1 | tee -a $O/verify.log; done
echo "=== A/B vs 2d53e2a $(date -u +%T)"
mkdir -p /tmp/old && git archive 2d53e2a lc0py kernels | tar -x -C /tmp/old
ROUNDS=3 OUT=$O/ab_t82 timeout 200 scripts/device/gpu_ab /tmp/old 64,256,1024 2>&1 | tail -5
PRESET=res-20x256 ROUNDS=3 OUT=$O/ab_res timeout 150 scripts/device/gpu_ab /tmp/old 64,256,1024 2>&1 | tail -5
echo "=== done $(date -u +%T)"
