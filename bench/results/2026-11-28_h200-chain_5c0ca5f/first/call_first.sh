#!/usr/bin/env bash
# stop 18, call 3: smolgen_chain (one kernel for smolgen's compress, dense 1 + LN, dense 2 + LN):
# its GPU tests, backendbench A/B at 1-4 (+8 as a control), 3 alternating rounds, kernel profile at 1
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/c; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C"; nproc; } > $O/info.txt 2>&1
timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1; el make-net
timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider tests/backends/gpu/test_gpu_fusions.py -k "chain" > $O/chain_tests.log 2>&1
echo "chain tests rc $?" >> $O/info.txt; tail -3 $O/chain_tests.log >> $O/info.txt; el chain-tests
BB="--batch-sizes 1,2,3,4,8 --batches 300 --json"
for r in 1 2 3; do
  timeout 60 python3 -m lc0py backendbench -w /tmp/t82.pb.gz -b cuda-fp16 -o smolgen_chain=off $BB > $O/bb_off_$r.jsonl 2>>$O/bb.err
  timeout 60 python3 -m lc0py backendbench -w /tmp/t82.pb.gz -b cuda-fp16 -o smolgen_chain=on $BB > $O/bb_on_$r.jsonl 2>>$O/bb.err
  el bb round $r
done
timeout 60 python3 scripts/bench/gpu_kernel_profile.py --weights /tmp/t82.pb.gz --batch 1 --top 30 --backend-opts smolgen_chain=on > $O/profile_b1_chain.txt 2>&1
timeout 60 python3 scripts/bench/gpu_kernel_profile.py --weights /tmp/t82.pb.gz --batch 4 --top 30 --backend-opts smolgen_chain=on > $O/profile_b4_chain.txt 2>&1
el profile


cd $OUT && tar czf c.tgz c && rm -rf c
