#!/usr/bin/env bash
# stop 28, call 5: the flash kernel with the net's shape compiled in -- base (HEAD) vs new tree,
# alternating processes: graph replay of the pass at 8..1024, CUPTI flash time at 256/1024; GPU flash tests; verify
set -u
export PYTHONUNBUFFERED=1 LC0PY_CACHE_DIR=/tmp/c
O=$OUT/shape; mkdir -p $O; t=$(date +%s)
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "new tree $C (uncommitted: flash shape constants) vs base $(cat .dev/base/REV 2>/dev/null)"; } > $O/info.txt 2>&1
cp .dev/call45.sh .dev/kprobe3.py $O/
[ -f /tmp/t82.pb.gz ] || PYTHONPATH=$PWD timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1
run() {  # tree label
  local root=$1 lab=$2
  PYTHONPATH=$PWD/.whl/site:$root LC0PY_KERNEL_CACHE=/tmp/k$lab LC0PY_TUNED_DIR=/tmp/tuned$lab timeout 200 \
    python3 $PWD/scripts/bench/graph_replay.py --weights /tmp/t82.pb.gz --variants "" --sizes 8,32,64,256,1024 --rounds 2 --replays 40 \
    --json $O/replay_${lab}_$r.jsonl > /dev/null 2>> $O/err.txt
}
for r in 1 2 3; do run $PWD/.dev/base base; run $PWD new; done
echo "replay done $(( $(date +%s) - t )) s" >> $O/info.txt
python3 - "$O" >> $O/info.txt <<'PY'
import json, sys, glob, statistics
o = sys.argv[1]
for lab in ("base", "new"):
    ms = {}
    for f in sorted(glob.glob(f"{o}/replay_{lab}_*.jsonl")):
        for line in open(f):
            row = json.loads(line); ms.setdefault(row["size"], []).extend(row["rounds_ms"])
    print(lab, " ".join(f"{n}:{statistics.median(v):.4f}" for n, v in sorted(ms.items())))
PY
for lab in base new; do root=$PWD; [ $lab = base ] && root=$PWD/.dev/base
  for n in 256 1024; do
    PYTHONPATH=$PWD/.whl/site:$root LC0PY_KERNEL_CACHE=/tmp/k$lab LC0PY_TUNED_DIR=/tmp/tuned$lab timeout 150 \
      python3 .dev/kprobe3.py /tmp/t82.pb.gz $n "" 2>&1 | grep -v Warn | grep -E "==|flash" > $O/cupti_${lab}_$n.txt
  done; done
grep -H "" $O/cupti_*.txt >> $O/info.txt
echo "cupti done $(( $(date +%s) - t )) s" >> $O/info.txt
export PYTHONPATH=$PWD/.whl/site:$PWD LC0PY_KERNEL_CACHE=/tmp/knew LC0PY_TUNED_DIR=/tmp/tunednew
timeout 60 python3 -m lc0py verify -w /tmp/t82.pb.gz -b cuda-fp16 > $O/verify_t82.txt 2>&1; echo "verify t82 rc $? $(grep -o 'worst relative error [0-9.e+-]*' $O/verify_t82.txt)" >> $O/info.txt
timeout 60 python3 -m lc0py verify -w /tmp/t82.pb.gz -b cuda-fp16 -o flash=v1 > $O/verify_t82_v1.txt 2>&1; echo "verify t82 flash=v1 rc $? $(grep -o 'worst relative error [0-9.e+-]*' $O/verify_t82_v1.txt)" >> $O/info.txt
for p in t82-h12 t82-h8 t82-h6; do timeout 90 python3 -m lc0py verify --preset $p --layers 2 -b cuda-fp16 > $O/verify_$p.txt 2>&1; echo "verify $p rc $? $(grep -o 'worst relative error [0-9.e+-]*' $O/verify_$p.txt)" >> $O/info.txt; done
LC0PY_TEST_NETS=$PWD/.nets timeout 250 python3 -m pytest -m gpu -q -p no:cacheprovider tests/ -k "flash or attention" > $O/gpu_tests.log 2>&1
echo "gpu tests (flash/attention) rc $? $(tail -1 $O/gpu_tests.log) $(( $(date +%s) - t )) s" >> $O/info.txt
cat $O/info.txt; tail -5 $O/err.txt 2>/dev/null
