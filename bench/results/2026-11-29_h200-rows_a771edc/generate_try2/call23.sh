#!/usr/bin/env bash
# smolgen_generate: dense 2 without its LN tail + LN2/generator row kernel; tests, device times, kernels, backendbench
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/gen; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C"; } > $O/info.txt 2>&1
cp .dev/call23.sh .dev/kprobe3.py $O/
timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1
timeout 200 python3 -m pytest -q -p no:cacheprovider -x tests/backends/gpu/test_gpu_fusions.py -k "generate" > $O/tests_generate.log 2>&1
echo "generate tests rc $?: $(tail -1 $O/tests_generate.log)" >> $O/info.txt; el tests
grep -E "^E |FAILED" $O/tests_generate.log | head -20
for b in cuda-fp16 cuda; do timeout 60 python3 -m lc0py verify -w /tmp/t82.pb.gz -b $b -o smolgen_generate=on > $O/verify_t82_$b.txt 2>&1; echo "verify $b rc $?" >> $O/info.txt; done
timeout 150 python3 scripts/bench/graph_replay.py --weights /tmp/t82.pb.gz --variants "smolgen_generate=off;smolgen_generate=on" --sizes 1 --rounds 6 > $O/replay_b1.txt 2>&1; el replay1
timeout 150 python3 scripts/bench/graph_replay.py --weights /tmp/t82.pb.gz --variants "smolgen_rows=off;smolgen_rows=on,smolgen_generate=off;smolgen_rows=on,smolgen_generate=on" --sizes 2,4,8 --rounds 4 > $O/replay_b248.txt 2>&1; el replay248
timeout 150 python3 .dev/kprobe3.py /tmp/t82.pb.gz 1 "smolgen_generate=off;smolgen_generate=on" > $O/kernels_b1.txt 2>&1; el kernels
for r in 1 2 3; do for o in smolgen_generate=off smolgen_generate=on; do
  timeout 100 python3 -m lc0py backendbench -w /tmp/t82.pb.gz -b cuda-fp16 -o $o --batch-sizes 1,2,4 --batches 400 --json > $O/bb_${o#smolgen_generate=}_r$r.jsonl 2>/dev/null
done; done; el backendbench
cat $O/info.txt; tail -8 $O/replay_b1.txt; tail -12 $O/replay_b248.txt; grep -E "^==|generate|dense_rows|nvjet_sm90_hsh_24" $O/kernels_b1.txt
for f in $O/bb_*.jsonl; do echo "$(basename $f) $(python3 -c "import json,sys; print(' '.join(str(d['size'])+':'+format(d['mean_ms'],'.4f') for d in map(json.loads, open(sys.argv[1]))))" $f)"; done
grep -E "PASS|FAIL|error" $O/verify_*.txt | head
cd $OUT && tar czf gen.tgz gen && rm -rf gen
