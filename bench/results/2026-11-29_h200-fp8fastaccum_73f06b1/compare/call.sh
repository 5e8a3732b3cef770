#!/usr/bin/env bash
# stop 30, call 6 (one H200): cuda-fp8 with cuBLASLt's fast FP8 accumulation (fp8_fast_accum=on,
# never measured): graph replay against the default in one process, fp16 in the same call,
# accuracy against cuda-fp16 over 1,024 positions, verify
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c LC0PY_TUNED_DIR=/tmp/tuned59
O=$OUT/a; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C"; } > $O/info.txt 2>&1
cp .dev/call59.sh $O/call.sh
N=/tmp/t82.pb.gz
timeout 60 python3 -m lc0py make-net --preset t82 -o $N > /dev/null 2>&1; el make-net
timeout 200 python3 scripts/bench/graph_replay.py --weights $N --backend cuda-fp8 --variants "max_batch=1024;max_batch=1024,fp8_fast_accum=on" --sizes 64,256,1024 --rounds 6 --replays 30 --json $O/replay_fp8.jsonl > $O/replay_fp8.txt 2>>$O/err.txt; el replay-fp8
timeout 100 python3 scripts/bench/graph_replay.py --weights $N --backend cuda-fp16 --variants "max_batch=1024" --sizes 64,256,1024 --rounds 4 --replays 30 > $O/replay_fp16.txt 2>>$O/err.txt; el replay-fp16
timeout 150 python3 scripts/device/fp8_accuracy.py --preset t82 --positions 1024 --ref 16 --emulate 0 --variant "" --variant "fp8_fast_accum=on" --json $O/accuracy.json --md $O/accuracy.md > $O/accuracy.txt 2>>$O/err.txt; el accuracy
timeout 100 python3 -m lc0py verify --preset t82 --backend cuda-fp8 -o fp8_fast_accum=on --batch 8 --seed 7 > $O/verify.txt 2>&1; echo "verify rc $?" >> $O/info.txt; el verify
cd $OUT && tar czf a.tgz a && rm -rf a
