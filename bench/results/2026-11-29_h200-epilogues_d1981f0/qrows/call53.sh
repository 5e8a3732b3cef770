#!/usr/bin/env bash
# stop 29, call 6: fp8_quantize_rows with the row in registers -- base (HEAD) vs new, cuda-fp8 graph replay at
# 256/1024 in alternating processes; CUPTI per kernel (new, 1024); fp8 self-test; verify; the GPU FP8 tests
set -u
export PYTHONUNBUFFERED=1 LC0PY_CACHE_DIR=/tmp/c
O=$OUT/qrows; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "new tree $C + fp8_quantize_rows in registers (uncommitted) vs base $(cat .dev/base/REV)"; } > $O/info.txt 2>&1
cp .dev/call53.sh $O/
PYTHONPATH=$PWD/.whl/site:$PWD timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1
env_for() { if [ $1 = base ]; then echo "PYTHONPATH=$PWD/.whl/site:$PWD/.dev/base LC0PY_KERNEL_CACHE=/tmp/kbase LC0PY_TUNED_DIR=/tmp/tunedbase"; else echo "PYTHONPATH=$PWD/.whl/site:$PWD LC0PY_KERNEL_CACHE=/tmp/knew LC0PY_TUNED_DIR=/tmp/tunednew"; fi; }
for r in 1 2; do for lab in base new; do
  env $(env_for $lab) timeout 100 python3 $PWD/scripts/bench/graph_replay.py --weights /tmp/t82.pb.gz --backend cuda-fp8 --variants "" --sizes 256,1024 \
    --rounds 2 --replays 30 --json $O/replay_${lab}_$r.jsonl > /dev/null 2>> $O/err.txt
done; done; el replay
python3 - "$O" >> $O/info.txt <<'PY'
import json, sys, glob, statistics
o = sys.argv[1]; med = {}
for lab in ("base", "new"):
    ms = {}
    for f in sorted(glob.glob(f"{o}/replay_{lab}_*.jsonl")):
        for line in open(f):
            row = json.loads(line); ms.setdefault(row["size"], []).extend(row["rounds_ms"])
    med[lab] = {n: statistics.median(v) for n, v in ms.items()}
    print(lab, " ".join(f"{n}:{m:.4f}" for n, m in sorted(med[lab].items())))
print("fp8 base/new", " ".join(f"{n}:{med['base'][n]/med['new'][n]:.3f}" for n in sorted(med["new"])))
PY
env $(env_for new) timeout 100 python3 .dev/kprobe5.py /tmp/t82.pb.gz 1024 "" 12 cuda-fp8 2>&1 | grep -v -i warn > $O/cupti_new_1024.txt; el cupti
grep -E "==|quantize_rows" $O/cupti_new_1024.txt >> $O/info.txt
export $(env_for new)
timeout 100 python3 scripts/device/fp8_selftest.py --json $O/selftest.json > $O/selftest.txt 2>&1; el "selftest rc $?"
grep -c PASS $O/selftest.txt >> $O/info.txt; grep FAIL $O/selftest.txt >> $O/info.txt
timeout 60 python3 -m lc0py verify -w /tmp/t82.pb.gz -b cuda-fp8 > $O/verify_t82_fp8.txt 2>&1; echo "verify t82 cuda-fp8 rc $? $(grep -o 'worst relative error [0-9.e+-]*' $O/verify_t82_fp8.txt)" >> $O/info.txt
LC0PY_TEST_NETS=$PWD/.nets timeout $(( 300 - ($(date +%s) - t) )) python3 -m pytest -m gpu -q -p no:cacheprovider -k "fp8" tests/ > $O/gpu_fp8_tests.txt 2>&1; el "fp8 tests rc $?"
tail -1 $O/gpu_fp8_tests.txt >> $O/info.txt
cat $O/info.txt
cd $OUT && tar czf qrows.tgz qrows
