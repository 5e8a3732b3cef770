#!/usr/bin/env bash
# stop 20, call 2: SearchThreads 1/2/3 against lc0 on maia-1900 and meangirl-8 (cuda-fp16) and
# search-only (random backend), 2 alternating rounds; the MT test file on the device host
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/h; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C"; nproc; } > $O/info.txt 2>&1
cp .dev/call38.sh $O/call.sh
L=.dev/lc0-cuda/lc0-on-device
python3 -c "from lc0py.search.warmup import warm_up; print(f'core {warm_up():.1f} s')" >> $O/info.txt 2>&1; el warmup
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/search/test_search_threads.py > $O/tests.log 2>&1; echo "tests rc $?" >> $O/info.txt; el tests
for n in maia-1900 meangirl-8; do timeout 60 python3 -m lc0py benchmark -w .nets/$n.pb.gz -b cuda-fp16 --nodes 200 --num-positions 1 > /dev/null 2>&1; done; el kernels
nps() { grep -E "Nodes/second" "$1" | tail -1 | tr -dc '0-9.'; }
for r in 1 2; do
  if [ $r = 1 ]; then order="1 2 3"; else order="3 2 1"; fi
  for n in maia-1900 meangirl-8; do
    for st in $order; do
      timeout 60 python3 -m lc0py benchmark -w .nets/$n.pb.gz -b cuda-fp16 --nodes 20000 --num-positions 6 --search-threads $st > $O/lc0py_st${st}_${n}_r$r.txt 2>&1
      echo "r$r $n lc0py st$st $(nps $O/lc0py_st${st}_${n}_r$r.txt)" >> $O/runs.txt
    done
    timeout 60 $L benchmark --weights=.nets/$n.pb.gz --backend=cuda-fp16 --nodes=20000 --num-positions=6 > $O/lc0_${n}_r$r.txt 2>&1
    echo "r$r $n lc0 $(nps $O/lc0_${n}_r$r.txt)" >> $O/runs.txt
  done
  for st in $order 4; do
    timeout 60 python3 -m lc0py benchmark --backend random --nodes 20000 --num-positions 6 --search-threads $st > $O/rand_st${st}_r$r.txt 2>&1
    echo "r$r random lc0py st$st $(nps $O/rand_st${st}_r$r.txt)" >> $O/runs.txt
  done
  timeout 60 $L benchmark --backend=random --nodes=20000 --num-positions=6 > $O/rand_lc0_r$r.txt 2>&1
  echo "r$r random lc0 $(nps $O/rand_lc0_r$r.txt)" >> $O/runs.txt
done; el runs
cd $OUT && tar czf h.tgz h && rm -rf h
