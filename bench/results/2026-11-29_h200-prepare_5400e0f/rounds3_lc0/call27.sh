#!/usr/bin/env bash
# results prepared on the feeder's thread: base tree (.dev/base = 5400e0f) vs this tree, lc0py benchmark
# (6 positions x 20,000 nodes, cuda-fp16, defaults) on maia-1900 and meangirl-8, 3 alternating rounds, lc0 in each
set -u
export PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/prep; mkdir -p $O; START=$(date +%s); R=$PWD
el() { echo $(( $(date +%s) - START )); }
LC0=$R/.dev/lc0-cuda/lc0-on-device
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; nproc; echo "tree $C (base 5400e0f)"; echo "lc0 $LC0"; } > $O/info.txt 2>&1
cp .dev/call27.sh $O/
nps() { python3 -c "
import re,sys; t=open(sys.argv[1],errors='replace').read(); m=re.findall(r'Nodes/second\s*:\s*([0-9.]+)',t); print(m[-1] if m else '?')" $1; }
for tree in base new; do
  if [ $tree = base ]; then d=$R/.dev/base; else d=$R; fi
  (cd $d && PYTHONPATH=$R/.whl/site:$d python3 -c "from lc0py.search.warmup import warm_up; print(f'$tree core ready in {warm_up():.1f} s')" >> $O/info.txt 2>&1)
  for net in maia-1900 meangirl-8; do (cd $d && PYTHONPATH=$R/.whl/site:$d python3 -m lc0py benchmark -w $R/.nets/$net.pb.gz -b cuda-fp16 --nodes 200 --num-positions 1 > /dev/null 2>&1); done
done
echo "warm $(el) s" >> $O/info.txt
for r in 1 2 3; do for net in maia-1900 meangirl-8; do
  [ $(el) -ge 470 ] && { echo "budget: stopped at round $r $net" >> $O/info.txt; break 2; }
  line="round $r $net:"
  for tree in base new; do
    if [ $tree = base ]; then d=$R/.dev/base; else d=$R; fi
    (cd $d && PYTHONPATH=$R/.whl/site:$d timeout 60 python3 -m lc0py benchmark -w $R/.nets/$net.pb.gz -b cuda-fp16 --nodes 20000 --num-positions 6 > $O/${tree}_${net}_r$r.txt 2>&1)
    line="$line $tree $(nps $O/${tree}_${net}_r$r.txt)"
  done
  timeout 60 $LC0 benchmark --weights=$R/.nets/$net.pb.gz --backend=cuda-fp16 --nodes=20000 --num-positions=6 > $O/lc0_${net}_r$r.txt 2>&1
  echo "$line lc0 $(nps $O/lc0_${net}_r$r.txt) ($(el) s)" >> $O/info.txt
done; done
cat $O/info.txt
cd $OUT && tar czf prep.tgz prep && rm -rf prep
