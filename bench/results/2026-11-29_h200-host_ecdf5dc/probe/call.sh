#!/usr/bin/env bash
# host latency probe: where batch 1-16's host-timed latency goes (T82, maia-1900)
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/h; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C (working tree of the call)"; nproc; lscpu | grep "Model name"; } > $O/info.txt 2>&1
cp .dev/call10.sh $O/call.sh
timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1; el make-net
for w in /tmp/t82.pb.gz .nets/maia-1900.pb.gz; do
  b=$(basename $w .pb.gz)
  timeout 120 python3 scripts/bench/host_latency.py --weights $w --sizes 1,2,4,16,64 --batches 500 --json $O/hl_${b}.jsonl > $O/hl_${b}.txt 2>&1; el hl $b $?
  timeout 120 python3 scripts/bench/host_latency.py --weights $w --sizes 1,16 --batches 500 --calls --json $O/hl_${b}_calls.jsonl > $O/hl_${b}_calls.txt 2>&1; el hlc $b $?
  timeout 60 python3 -m lc0py backendbench -w $w -b cuda-fp16 --batch-sizes 1,2,4,16 --batches 300 --json > $O/bb_${b}.jsonl 2>>$O/bb.err; el bb $b
done
timeout 100 python3 -c "
import cProfile, pstats, sys, time
sys.path.insert(0, 'scripts/bench')
from graph_replay import Variant
from lc0py.chess import PositionHistory
from lc0py.tools.backendbench import make_batch, touch
v = Variant('cuda-fp16', '/tmp/t82.pb.gz', '', 16)
h = PositionHistory.from_fen(None); fmt = int(v.backend.network.input_format)
for _ in range(200): touch(v.backend.evaluate(make_batch(h, fmt, 1)))
pr = cProfile.Profile(); pr.enable()
for _ in range(2000): touch(v.backend.evaluate(make_batch(h, fmt, 1)))
pr.disable(); pstats.Stats(pr).sort_stats('tottime').print_stats(35)
v.close()
" > $O/cprofile_t82_b1.txt 2>&1; el cprofile
cat $O/hl_*.txt $O/info.txt
cd $OUT && tar czf h.tgz h && rm -rf h
