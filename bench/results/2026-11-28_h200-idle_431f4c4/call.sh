#!/usr/bin/env bash
# stop 17, call 4: when the device idles during a search (search_timeline's new idle report), T82 and
# meangirl-8 on cuda-fp16, lc0py's defaults; Python's GIL switch interval 5 ms (default) vs 0.1 ms, alternating
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/i; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C (+ search_timeline idle report, uncommitted)"; nproc; } > $O/info.txt 2>&1
timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1; el make-net
python3 -c "from lc0py.search.warmup import warm_up; print(f'core {warm_up():.1f} s')" > $O/warm.txt 2>&1; el warm
tl() { local name=$1 si=$2 w=$3; timeout 90 python3 -c "
import sys, runpy; sys.setswitchinterval($si)
sys.argv = ['search_timeline.py', '-w', '$w', '-b', 'cuda-fp16', '--minibatch-size', '0', '--nodes', '20000', '--positions', '3']
runpy.run_path('scripts/bench/search_timeline.py', run_name='__main__')" > $O/tl_$name.txt 2>&1; echo "$name: $(grep counted: $O/tl_$name.txt)" >> $O/summary.txt; }
for r in 1 2 3; do
  tl t82_si5ms_$r 0.005 /tmp/t82.pb.gz
  tl t82_si0.1ms_$r 0.0001 /tmp/t82.pb.gz
  el t82 round $r
done
for r in 1 2; do
  tl mg_si5ms_$r 0.005 .dev/nets/meangirl-8.pb.gz
  tl mg_si0.1ms_$r 0.0001 .dev/nets/meangirl-8.pb.gz
  el mg round $r
done
cd $OUT && tar czf i.tgz i && rm -rf i
