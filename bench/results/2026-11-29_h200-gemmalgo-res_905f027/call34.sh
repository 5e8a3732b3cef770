#!/usr/bin/env bash
# stop 26, call 6: gemm_tune for strided-batched GEMMs (Winograd): GPU tests, res-20x256 choices, peer_rounds
# new (this tree) / old (.dev/base = 33bf872) / PyTorch peer at 64/256/1024, 3 rounds
set -u
export PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c LC0PY_TUNED_DIR=/tmp/tuned34
R=$PWD; export PYTHONPATH=$R/.whl/site:$R
O=$OUT/res; mkdir -p $O; cp .dev/call34.sh .dev/gemm_choices.py $O/; START=$(date +%s); el() { echo $(( $(date +%s) - START )); }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm --format=csv,noheader; nproc; echo "tree $C (base 33bf872 in .dev/base)"; } > $O/info.txt 2>&1
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/backends/gpu/test_gemm_algos_gpu.py > $O/pytest.txt 2>&1; echo "pytest rc $? ($(el) s): $(tail -1 $O/pytest.txt)" >> $O/info.txt
python3 -m lc0py make-net --preset res-20x256 -o /tmp/res-20x256.pb.gz > /dev/null 2>&1
timeout 100 python3 .dev/gemm_choices.py /tmp/res-20x256.pb.gz cold > $O/prepare_cold.txt 2>&1; echo "prepare cold rc $? ($(el) s): $(head -2 $O/prepare_cold.txt | tr '\n' ' ')" >> $O/info.txt
timeout 60 python3 -m lc0py verify -w /tmp/res-20x256.pb.gz -b cuda-fp16 > $O/verify.txt 2>&1; echo "verify rc $? $(grep -o 'worst relative error [0-9.e+-]*' $O/verify.txt)" >> $O/info.txt
OUT=$O/peer PRESET=res-20x256 NET=/tmp/res-20x256.pb.gz SIZES=64,256,1024 ROUNDS=3 OLD=.dev/base timeout $(( 540 - $(el) )) scripts/device/peer_rounds > /dev/null 2>&1
echo "peer_rounds rc $? ($(el) s)" >> $O/info.txt; cp $O/peer/rounds.log $O/rounds.log; tail -n 3 $O/peer/err >> $O/info.txt 2>&1
cd $OUT && tar czf res.tgz res && rm -rf res && tar xzf res.tgz res/info.txt res/rounds.log && cat res/info.txt; tail -4 res/rounds.log
