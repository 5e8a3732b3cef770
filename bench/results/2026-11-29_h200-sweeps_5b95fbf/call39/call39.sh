#!/usr/bin/env bash
# stop 27, call 5: smolgen_branch_max 64 against 128: graph replay on T82 (56-64 crossover) and T78; T82 benchmark A/B.
set -u
export PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c LC0PY_TUNED_DIR=/tmp/t37 NUMBA_CACHE_DIR=/tmp/nb
R=$PWD; export PYTHONPATH=$R/.whl/site:$R
O=$OUT/branch; mkdir -p $O; cp .dev/call39.sh $O/; START=$(date +%s); el() { echo $(( $(date +%s) - START )); }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm --format=csv,noheader; echo "tree $C"; } > $O/info.txt 2>&1
for n in t82 t78; do [ -f /tmp/$n.pb.gz ] || python3 -m lc0py make-net --preset $n -o /tmp/$n.pb.gz > /dev/null 2>&1; done
timeout 150 python3 scripts/bench/graph_replay.py --weights /tmp/t82.pb.gz --sizes 52,56,60,64,68 --rounds 6 \
  --variants "smolgen_branch_max=128;smolgen_branch_max=48;smolgen_branch_max=56;smolgen_branch_max=64" > $O/t82_cross.txt 2>&1
echo "t82 crossover rc $? ($(el) s)" >> $O/info.txt
timeout 150 python3 scripts/bench/graph_replay.py --weights /tmp/t78.pb.gz --sizes 48,64,80,96,112,128 --rounds 6 \
  --variants "smolgen_branch_max=128;smolgen_branch_max=64" > $O/t78.txt 2>&1
echo "t78 rc $? ($(el) s)" >> $O/info.txt
python3 -m lc0py benchmark -w /tmp/t82.pb.gz -b cuda-fp16 --nodes 200 --num-positions 1 > /dev/null 2>&1  # warm caches
for r in 1 2 3; do
  for v in 128 64; do
    timeout 90 python3 -m lc0py benchmark -w /tmp/t82.pb.gz -b cuda-fp16 -o "smolgen_branch_max=$v" --nodes 20000 --num-positions 6 > $O/bench_${v}_$r.txt 2>&1
    echo "round $r max $v: $(grep -i 'nodes/second\|nps' $O/bench_${v}_$r.txt | tail -1) ($(el) s)" >> $O/info.txt
  done
done
cat $O/info.txt $O/t82_cross.txt $O/t78.txt
cd $OUT && tar czf branch.tgz branch
