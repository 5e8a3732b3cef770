#!/usr/bin/env bash
# stop 29, call 1: bias_act on a (chunk, row) grid with the fast activations, LayerNorm 4 rows a block;
# base (HEAD) vs new tree: kernels alone, graph replay of the pass, CUPTI per kernel; attn_copy_order=1; verify
set -u
export PYTHONUNBUFFERED=1 LC0PY_CACHE_DIR=/tmp/c
O=$OUT/ab; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "new tree $C (uncommitted: bias_act grid + fast act, LN 4 rows) vs base $(cat .dev/base/REV)"; } > $O/info.txt 2>&1
cp .dev/call48.sh .dev/lnprobe.py .dev/kprobe3.py $O/
PYTHONPATH=$PWD/.whl/site:$PWD timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1
env_for() { if [ $1 = base ]; then echo "PYTHONPATH=$PWD/.whl/site:$PWD/.dev/base LC0PY_KERNEL_CACHE=/tmp/kbase LC0PY_TUNED_DIR=/tmp/tunedbase"; else echo "PYTHONPATH=$PWD/.whl/site:$PWD LC0PY_KERNEL_CACHE=/tmp/knew LC0PY_TUNED_DIR=/tmp/tunednew"; fi; }
for lab in base new; do
  for rows in 65536 16384; do env $(env_for $lab) timeout 90 python3 .dev/lnprobe.py /tmp/t82.pb.gz $rows > $O/alone_${lab}_$rows.txt 2>&1; done
done; el alone
for lab in base new; do echo "--- $lab"; grep -E "default|bias_act|D2D" $O/alone_${lab}_*.txt; done >> $O/info.txt
for r in 1 2; do for lab in base new; do
  env $(env_for $lab) timeout 150 python3 $PWD/scripts/bench/graph_replay.py --weights /tmp/t82.pb.gz --variants "" --sizes 8,64,256,1024 \
    --rounds 2 --replays 40 --json $O/replay_${lab}_$r.jsonl > /dev/null 2>> $O/err.txt
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
print("base/new", " ".join(f"{n}:{med['base'][n]/med['new'][n]:.3f}" for n in sorted(med["new"])))
PY
for lab in base new; do
  env $(env_for $lab) timeout 100 python3 .dev/kprobe3.py /tmp/t82.pb.gz 1024 "" 2>&1 | grep -v Warn > $O/cupti_${lab}_1024.txt
done; el cupti
grep -H -E "==|bias_act|layernorm|flash" $O/cupti_*.txt >> $O/info.txt
env $(env_for new) timeout 120 python3 scripts/bench/graph_replay.py --weights /tmp/t82.pb.gz --variants ";attn_copy_order=1" \
  --sizes 64,256,1024 --rounds 4 --replays 40 > $O/copy_order.txt 2>&1; el copy_order; cat $O/copy_order.txt >> $O/info.txt
export $(env_for new)
for w in /tmp/t82.pb.gz .nets/maia-1900.pb.gz; do for b in cuda-fp16 cuda; do
  f=$O/verify_$(basename $w .pb.gz)_$b.txt
  timeout 60 python3 -m lc0py verify -w $w -b $b > $f 2>&1; echo "verify $(basename $w) $b rc $? $(grep -o 'worst relative error [0-9.e+-]*' $f)" >> $O/info.txt
done; done; el verify
cat $O/info.txt; tail -3 $O/err.txt 2>/dev/null
cd $OUT && tar czf ab.tgz ab
