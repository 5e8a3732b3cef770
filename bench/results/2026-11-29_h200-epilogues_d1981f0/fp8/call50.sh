#!/usr/bin/env bash
# stop 29, call 3: cuda-fp8 with lc0's fast activations in its FFN1/epilogue kernels -- base (c2b1d77) vs new:
# graph replay alternating processes at 256/1024; fp8 self-test; verify fp8; then the GPU suite part 1 of 3
set -u
export PYTHONUNBUFFERED=1 LC0PY_CACHE_DIR=/tmp/c
O=$OUT/fp8; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "new tree $C + fp8 fast activations (uncommitted) vs base $(cat .dev/base/REV)"; } > $O/info.txt 2>&1
cp .dev/call50.sh $O/
PYTHONPATH=$PWD/.whl/site:$PWD timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1
env_for() { if [ $1 = base ]; then echo "PYTHONPATH=$PWD/.whl/site:$PWD/.dev/base LC0PY_KERNEL_CACHE=/tmp/kbase LC0PY_TUNED_DIR=/tmp/tunedbase"; else echo "PYTHONPATH=$PWD/.whl/site:$PWD LC0PY_KERNEL_CACHE=/tmp/knew LC0PY_TUNED_DIR=/tmp/tunednew"; fi; }
for r in 1 2; do for lab in base new; do
  env $(env_for $lab) timeout 120 python3 $PWD/scripts/bench/graph_replay.py --weights /tmp/t82.pb.gz --backend cuda-fp8 --variants "" --sizes 256,1024 \
    --rounds 2 --replays 30 --json $O/replay_${lab}_$r.jsonl > /dev/null 2>> $O/err.txt
done; done
env $(env_for new) timeout 120 python3 $PWD/scripts/bench/graph_replay.py --weights /tmp/t82.pb.gz --backend cuda-fp16 --variants "" --sizes 256,1024 \
    --rounds 2 --replays 30 --json $O/replay_fp16new.jsonl > /dev/null 2>> $O/err.txt; el replay
python3 - "$O" >> $O/info.txt <<'PY'
import json, sys, glob, statistics
o = sys.argv[1]; med = {}
for lab in ("base", "new", "fp16new"):
    ms = {}
    for f in sorted(glob.glob(f"{o}/replay_{lab}*.jsonl")):
        for line in open(f):
            row = json.loads(line); ms.setdefault(row["size"], []).extend(row["rounds_ms"])
    med[lab] = {n: statistics.median(v) for n, v in ms.items()}
    print(lab, " ".join(f"{n}:{m:.4f}" for n, m in sorted(med[lab].items())))
print("fp8 base/new", " ".join(f"{n}:{med['base'][n]/med['new'][n]:.3f}" for n in sorted(med["new"])))
print("fp8 new vs fp16 new (speed)", " ".join(f"{n}:{med['fp16new'][n]/med['new'][n]:.3f}" for n in sorted(med["new"])))
PY
export $(env_for new)
timeout 200 python3 scripts/device/fp8_selftest.py --json $O/selftest.json > $O/selftest.txt 2>&1; el "selftest rc $?"
grep -E "PASS|FAIL|ok|bit-exact" $O/selftest.txt | tail -16 >> $O/info.txt
timeout 60 python3 -m lc0py verify -w /tmp/t82.pb.gz -b cuda-fp8 > $O/verify_t82_fp8.txt 2>&1; echo "verify t82 cuda-fp8 rc $? $(grep -o 'worst relative error [0-9.e+-]*' $O/verify_t82_fp8.txt)" >> $O/info.txt
timeout $(( 560 - ($(date +%s) - t) )) python3 scripts/device/gpu_suite.py --part 1 --parts 3 --out $O > /dev/null 2>&1; el "suite part 1 rc $?"
tail -3 $O/gpu_suite_1of3.txt >> $O/info.txt
cat $O/info.txt
cd $OUT && tar czf fp8.tgz fp8
