#!/usr/bin/env bash
# call B (final tree): GPU tests of what changed, backendbench A/B against the session's start (T82: fusion
# defaults; res-20x256: no regression), FP8 speed against fp16; one H100
set -u
export PYTHONPATH=$PWD/.dev/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/lc0py-k LC0PY_CACHE_DIR=/tmp/lc0py-c
T0=$(date +%s); O=$OUT/b; mkdir -p $O
fp8_round() {
  timeout 60 python3 -m lc0py backendbench -w /tmp/t82.pb.gz -b cuda-fp16,cuda-fp8 -o max_batch=1024 --batch-sizes 64,256,1024 --batches 50 --json >> $O/fp8_bench.jsonl 2>> $O/fp8_bench.err
  timeout 40 python3 -m lc0py backendbench -w /tmp/t82.pb.gz -b cuda-fp8 -o max_batch=1024,fp8_gemms=qkv+out+smolgen --batch-sizes 64,256,1024 --batches 50 --json | sed 's/^{/{"variant": "noffn", /' >> $O/fp8_bench.jsonl 2>> $O/fp8_bench.err
  echo "fp8 round $1 $(el)" >> $O/info.txt
}
el() { echo "+$(( $(date +%s) - T0 ))s"; }
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "tree $C"; } > $O/info.txt
( t=$(date +%s); python3 -c "from lc0py.search.warmup import warm_up; print(f'core ready {warm_up():.1f} s')"; echo "warm-up wall $(( $(date +%s) - t )) s" ) > $O/warm.txt 2>&1 &
python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz >/dev/null 2>&1
python3 -m lc0py make-net --preset res-20x256 -o /tmp/res-20x256.pb.gz >/dev/null 2>&1
echo "nets $(el)" >> $O/info.txt
timeout 200 python3 -m pytest -m gpu -p no:cacheprovider tests/backends/gpu tests/api/test_net_gpu.py > $O/gpu_tests.log 2>&1
echo "gpu tests rc $? $(el)" >> $O/info.txt; tail -1 $O/gpu_tests.log >> $O/info.txt
for b in cuda-fp16 cuda; do timeout 60 python3 -m lc0py verify --preset t82 --backend $b --batch 8 --seed 13 2>&1 | tail -1 | sed "s/^/t82 $b: /" >> $O/verify.log; done
echo "verify $(el)" >> $O/info.txt
fp8_round 1
mkdir -p /tmp/old && git archive 6d6a392 lc0py | tar -x -C /tmp/old
NET=/tmp/t82.pb.gz ROUNDS=2 OUT=$O/ab_t82 timeout 120 scripts/device/gpu_ab /tmp/old 64,256,1024 > $O/ab_t82.txt 2>&1
echo "ab t82 $(el)" >> $O/info.txt
NET=/tmp/res-20x256.pb.gz ROUNDS=2 OUT=$O/ab_res timeout 90 scripts/device/gpu_ab /tmp/old 64,256,1024 > $O/ab_res.txt 2>&1
echo "ab res $(el)" >> $O/info.txt
[ $(( $(date +%s) - T0 )) -lt 480 ] && fp8_round 2
wait
cd $OUT && tar czf b.tgz b && rm -rf b
