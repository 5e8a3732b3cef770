#!/usr/bin/env bash
# stop 27, call 1: GEMMs kept to fewer SMs tuned too, the store written once per prepare.
# GPU tests; cold/warm prepare new vs old (.dev/base = 6836297); alternating A/B (e2e_like_peer) T82 and res-20x256.
set -u
export PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
R=$PWD; export PYTHONPATH=$R/.whl/site:$R
O=$OUT/sms; mkdir -p $O; cp .dev/call35.sh .dev/gemm_choices.py $O/; START=$(date +%s); el() { echo $(( $(date +%s) - START )); }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm --format=csv,noheader; nproc; echo "tree $C (base 6836297 in .dev/base)"; } > $O/info.txt 2>&1
LC0PY_TUNED_DIR=/tmp/t35p timeout 150 python3 -m pytest -q -p no:cacheprovider tests/backends/gpu/test_gemm_algos_gpu.py > $O/pytest.txt 2>&1; echo "pytest rc $? ($(el) s): $(tail -1 $O/pytest.txt)" >> $O/info.txt
for n in t82 res-20x256; do python3 -m lc0py make-net --preset $n -o /tmp/$n.pb.gz > /dev/null 2>&1; done
for side in new old; do
  T=$R; [ $side = old ] && T=$R/.dev/base
  rm -rf /tmp/t35$side
  PYTHONPATH=$T:$R/.whl/site LC0PY_TUNED_DIR=/tmp/t35$side timeout 100 python3 .dev/gemm_choices.py /tmp/t82.pb.gz cold > $O/prepare_cold_$side.txt 2>&1
  echo "$side cold: $(head -2 $O/prepare_cold_$side.txt | tr '\n' ' ')" >> $O/info.txt
  PYTHONPATH=$T:$R/.whl/site LC0PY_TUNED_DIR=/tmp/t35$side timeout 100 python3 .dev/gemm_choices.py /tmp/t82.pb.gz warm > $O/prepare_warm_$side.txt 2>&1
  echo "$side warm: $(head -1 $O/prepare_warm_$side.txt)" >> $O/info.txt
done
ls -la /tmp/t35new /tmp/t35old >> $O/info.txt 2>&1
for r in 1 2 3; do for side in new old; do
  T=$R; [ $side = old ] && T=$R/.dev/base
  PYTHONPATH=$T:$R/.whl/site LC0PY_TUNED_DIR=/tmp/t35$side timeout 120 python3 scripts/bench/e2e_like_peer.py /tmp/t82.pb.gz 16,32,64,96,128,256 2>>$O/err | sed "s|^{|{\"side\": \"$side\", \"net\": \"t82\", \"round\": $r, |" >> $O/ab.jsonl
  PYTHONPATH=$T:$R/.whl/site LC0PY_TUNED_DIR=/tmp/t35$side timeout 120 python3 scripts/bench/e2e_like_peer.py /tmp/res-20x256.pb.gz 32,64,256,1024 2>>$O/err | sed "s|^{|{\"side\": \"$side\", \"net\": \"res\", \"round\": $r, |" >> $O/ab.jsonl
done; echo "round $r ($(el) s)" >> $O/info.txt; done
python3 - $O/ab.jsonl <<'PY' > $O/ab.txt
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
for net in ("t82", "res"):
    for b in sorted({r["batch"] for r in rows if r["net"] == net}):
        v = {s: [r["nps"] for r in rows if r["net"] == net and r["batch"] == b and r["side"] == s] for s in ("new", "old")}
        if v["new"] and v["old"]:
            ratios = [n / o for n, o in zip(v["new"], v["old"])]
            print(f"{net} {b}: new {[round(x) for x in v['new']]} old {[round(x) for x in v['old']]} new/old median {statistics.median(v['new'])/statistics.median(v['old']):.3f} per round {[round(x, 3) for x in ratios]}")
PY
for n in t82 res-20x256; do LC0PY_TUNED_DIR=/tmp/t35new timeout 90 python3 -m lc0py verify -w /tmp/$n.pb.gz -b cuda-fp16 > $O/verify_$n.txt 2>&1; echo "verify $n rc $? $(grep -o 'worst relative error [0-9.e+-]*' $O/verify_$n.txt | head -3 | tr '\n' ' ')" >> $O/info.txt; done
echo "end ($(el) s)" >> $O/info.txt
cd $OUT && tar czf sms.tgz sms && cat sms/info.txt sms/ab.txt; grep -c " sms " sms/prepare_cold_new.txt; grep " sms " sms/prepare_cold_new.txt | head -30
