#!/usr/bin/env bash
# stop 18, call 4: smolgen_chain probe (configs x rows, step stamps), then backendbench A/B at 1-4 with the new defaults
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/p; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C"; nproc; } > $O/info.txt 2>&1
timeout 150 python3 scripts/bench/smolgen_chain_probe.py --configs 4x8x32,8x24x32,8x8x96,8x6x128,8x24x16 --rows 1,4 > $O/probe.txt 2>&1; el probe
timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1; el make-net
BB="--batch-sizes 1,2,4 --batches 300 --json"
for r in 1 2; do
  timeout 60 python3 -m lc0py backendbench -w /tmp/t82.pb.gz -b cuda-fp16 -o smolgen_chain=off $BB > $O/bb_off_$r.jsonl 2>>$O/bb.err
  timeout 60 python3 -m lc0py backendbench -w /tmp/t82.pb.gz -b cuda-fp16 -o smolgen_chain=on $BB > $O/bb_on_$r.jsonl 2>>$O/bb.err
  el bb round $r
done
cd $OUT && tar czf p.tgz p && rm -rf p
