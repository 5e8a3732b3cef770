#!/usr/bin/env bash
# stop 26, call 2: gemm_tune (timed cuBLASLt algorithms): GPU tests, prepare cold/warm/off, peer_rounds
# new (this tree) / old (.dev/base = 33bf872) / PyTorch peer at 64/256/1024, verify
set -u
export PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c LC0PY_TUNED_DIR=/tmp/tuned
R=$PWD; export PYTHONPATH=$R/.whl/site:$R
O=$OUT/c30; mkdir -p $O; cp .dev/call30.sh .dev/gemm_choices.py $O/; START=$(date +%s); el() { echo $(( $(date +%s) - START )); }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm --format=csv,noheader; nproc; echo "tree $C (base 33bf872 in .dev/base)"; } > $O/info.txt 2>&1
python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/backends/gpu/test_gemm_algos_gpu.py tests/gpu/test_gemm_algos.py > $O/pytest.txt 2>&1; echo "pytest rc $? ($(el) s): $(tail -1 $O/pytest.txt)" >> $O/info.txt
for mode in cold warm off; do timeout 150 python3 .dev/gemm_choices.py /tmp/t82.pb.gz $mode > $O/prepare_$mode.txt 2>&1; echo "prepare $mode rc $? ($(el) s): $(head -1 $O/prepare_$mode.txt)" >> $O/info.txt; done
[ $(el) -lt 330 ] && PYTHONPATH=$R/.whl/site OUT=$O/peer PRESET=t82 NET=/tmp/t82.pb.gz SIZES=64,256,1024 ROUNDS=2 OLD=.dev/base timeout $(( 560 - $(el) - 60 )) scripts/device/peer_rounds > /dev/null 2>&1
echo "peer_rounds done ($(el) s)" >> $O/info.txt; tail -5 $O/peer/err $O/peer/peer.err >> $O/info.txt 2>&1
[ $(el) -lt 520 ] && timeout 60 python3 -m lc0py verify -w /tmp/t82.pb.gz -b cuda-fp16 > $O/verify.txt 2>&1; echo "verify rc $? ($(el) s): $(tail -2 $O/verify.txt | tr '\n' ' ')" >> $O/info.txt
cat $O/info.txt; tail -4 $O/peer/rounds.log 2>/dev/null
