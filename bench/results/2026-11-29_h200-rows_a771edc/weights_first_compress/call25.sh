#!/usr/bin/env bash
# dense_rows' weights loaded before the dependent-launch wait: base tree (.dev/base) vs this tree, alternating processes
set -u
export PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/wb2; mkdir -p $O; t=$(date +%s); R=$PWD
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C (base d9bf204)"; } > $O/info.txt 2>&1
cp .dev/call25.sh $O/
PYTHONPATH=$R/.whl/site:$R timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1
for r in 1 2 3 4; do for tree in base new; do
  if [ $tree = base ]; then d=$R/.dev/base; else d=$R; fi
  (cd $d && PYTHONPATH=$R/.whl/site:$d timeout 100 python3 scripts/bench/graph_replay.py --weights /tmp/t82.pb.gz --variants "" --sizes 1,2,4,8 --rounds 2 2>&1 | grep -E "^ +[0-9]+ " | sed "s/^/$tree r$r /" >> $O/replay.txt)
  (cd $d && PYTHONPATH=$R/.whl/site:$d timeout 100 python3 -m lc0py backendbench -w /tmp/t82.pb.gz -b cuda-fp16 --batch-sizes 1,4,8 --batches 400 --json > $O/bb_${tree}_r$r.jsonl 2>/dev/null)
done; done; el ab
PYTHONPATH=$R/.whl/site:$R timeout 300 python3 -m pytest -q -p no:cacheprovider tests/backends/gpu/test_gpu_fusions.py tests/kernels -m gpu > $O/tests_rows.log 2>&1; echo "rows tests rc $?: $(tail -1 $O/tests_rows.log)" >> $O/info.txt; el tests
for b in cuda-fp16 cuda; do PYTHONPATH=$R/.whl/site:$R timeout 60 python3 -m lc0py verify -w /tmp/t82.pb.gz -b $b > $O/verify_$b.txt 2>&1; echo "verify $b rc $? $(grep -o "PASS.*error [0-9.e-]*" $O/verify_$b.txt)" >> $O/info.txt; done
cat $O/info.txt $O/replay.txt; grep -E "FAILED|^E " $O/tests_rows.log | head
for f in $O/bb_*.jsonl; do echo "$(basename $f) $(python3 -c "import json,sys; print(' '.join(str(d['size'])+':'+format(d['mean_ms'],'.4f') for d in map(json.loads, open(sys.argv[1]))))" $f)"; done
cd $OUT && tar czf wb2.tgz wb2 && rm -rf wb2
