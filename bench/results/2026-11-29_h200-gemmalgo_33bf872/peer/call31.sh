#!/usr/bin/env bash
# stop 26, call 3: gemm_tune end to end: peer_rounds new (this tree) / old (.dev/base = 33bf872) / PyTorch peer
# at 64/256/1024, 3 rounds; the choices made on a cold tuned folder first
set -u
export PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c LC0PY_TUNED_DIR=/tmp/tuned31
R=$PWD; export PYTHONPATH=$R/.whl/site:$R
O=$OUT/c31; mkdir -p $O; cp .dev/call31.sh .dev/gemm_choices.py $O/; START=$(date +%s); el() { echo $(( $(date +%s) - START )); }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm --format=csv,noheader; nproc; echo "tree $C (base 33bf872 in .dev/base)"; } > $O/info.txt 2>&1
python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1
timeout 100 python3 .dev/gemm_choices.py /tmp/t82.pb.gz cold > $O/prepare_cold.txt 2>&1; echo "prepare cold rc $? ($(el) s): $(head -2 $O/prepare_cold.txt | tr '\n' ' ')" >> $O/info.txt
OUT=$O/peer PRESET=t82 NET=/tmp/t82.pb.gz SIZES=64,256,1024 ROUNDS=3 OLD=.dev/base timeout 480 scripts/device/peer_rounds > $O/peer_stdout.txt 2>&1
echo "peer_rounds rc $? ($(el) s)" >> $O/info.txt
for f in err peer.err; do echo "== $f"; tail -n 6 $O/peer/$f; done >> $O/info.txt 2>&1
cp $O/peer/rounds.log $O/rounds.log 2>/dev/null
cat $O/info.txt; tail -5 $O/rounds.log
