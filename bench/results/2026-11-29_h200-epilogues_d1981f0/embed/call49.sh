#!/usr/bin/env bash
# stop 29, call 2: embed_epilogue on the (chunk, row) grid; CUPTI per kernel base (6f29082) vs new at 1024,
# new at 8 and 64 (every kernel, memsets); peer_rounds new / old (6f29082) / PyTorch peer, 2 rounds
set -u
export PYTHONUNBUFFERED=1 LC0PY_CACHE_DIR=/tmp/c
O=$OUT/final; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "new tree $C + embed_epilogue change (uncommitted) vs base $(cat .dev/base/REV)"; } > $O/info.txt 2>&1
cp .dev/call49.sh .dev/kprobe4.py $O/
PYTHONPATH=$PWD/.whl/site:$PWD timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1
env_for() { if [ $1 = base ]; then echo "PYTHONPATH=$PWD/.whl/site:$PWD/.dev/base LC0PY_KERNEL_CACHE=/tmp/kbase LC0PY_TUNED_DIR=/tmp/tunedbase"; else echo "PYTHONPATH=$PWD/.whl/site:$PWD LC0PY_KERNEL_CACHE=/tmp/knew LC0PY_TUNED_DIR=/tmp/tunednew"; fi; }
for lab in base new; do
  env $(env_for $lab) timeout 100 python3 .dev/kprobe4.py /tmp/t82.pb.gz 1024 "" 16 2>&1 | grep -v Warn > $O/cupti_${lab}_1024.txt
done
for n in 8 64; do env $(env_for new) timeout 100 python3 .dev/kprobe4.py /tmp/t82.pb.gz $n "" 60 2>&1 | grep -v Warn > $O/cupti_new_$n.txt; done; el cupti
grep -H -E "==|embed|bias_act|layernorm|Memset" $O/cupti_*.txt >> $O/info.txt
OUT=$O/peer NET=/tmp/t82.pb.gz SIZES=64,256,1024 ROUNDS=2 OLD=.dev/base C=$C PYTHONPATH=$PWD/.whl/site timeout 360 scripts/device/peer_rounds > /dev/null 2>&1
el "peer_rounds rc $?"; tail -8 $O/peer/rounds.log >> $O/info.txt
export $(env_for new)
timeout 60 python3 -m lc0py verify -w /tmp/t82.pb.gz -b cuda-fp16 > $O/verify_t82.txt 2>&1; echo "verify t82 rc $? $(grep -o 'worst relative error [0-9.e+-]*' $O/verify_t82.txt)" >> $O/info.txt
cat $O/info.txt
cd $OUT && tar czf final.tgz final
