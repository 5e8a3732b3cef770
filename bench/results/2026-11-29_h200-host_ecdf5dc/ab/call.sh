#!/usr/bin/env bash
# host path A/B: 47c69fb (.dev/base) vs the working tree; backendbench alternating, host_latency, graph_replay
set -u
export PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
R=$PWD; NEW=$R/.whl/site:$R; BASE=$R/.whl/site:$R/.dev/base
# `python -m` puts the working directory first on sys.path: each tree runs from its own folder
D_new=$R; D_base=$R/.dev/base
O=$OUT/a; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C (working tree of the call); base 47c69fb"; nproc; lscpu | grep "Model name"; } > $O/info.txt 2>&1
cp .dev/call11.sh $O/call.sh
PYTHONPATH=$NEW timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1; el make-net
for r in 1 2 3 4; do
  if [ $((r % 2)) = 1 ]; then order="base new"; else order="new base"; fi
  for v in $order; do
    [ $v = new ] && P=$NEW || P=$BASE; [ $v = new ] && D=$D_new || D=$D_base
    (cd $D && PYTHONPATH=$P timeout 60 python3 -m lc0py backendbench -w /tmp/t82.pb.gz -b cuda-fp16 --batch-sizes 1,2,4,16 --batches 400 --json) > $O/bb_t82_${v}_$r.jsonl 2>>$O/bb.err
    (cd $D && PYTHONPATH=$P timeout 60 python3 -m lc0py backendbench -w $R/.nets/maia-1900.pb.gz -b cuda-fp16 --batch-sizes 1,16,64 --batches 400 --json) > $O/bb_maia_${v}_$r.jsonl 2>>$O/bb.err
  done
done; el bb
for v in base new; do
  [ $v = new ] && P=$NEW || P=$BASE
  PYTHONPATH=$P python3 -c "import lc0py, sys; print(lc0py.__file__)" >> $O/info.txt
  PYTHONPATH=$P timeout 120 python3 scripts/bench/host_latency.py --weights /tmp/t82.pb.gz --sizes 1,4,16 --batches 500 --json $O/hl_t82_$v.jsonl > $O/hl_t82_$v.txt 2>&1; el hl $v $?
  PYTHONPATH=$P timeout 120 python3 scripts/bench/host_latency.py --weights .nets/maia-1900.pb.gz --sizes 1,16 --batches 500 --json $O/hl_maia_$v.jsonl > $O/hl_maia_$v.txt 2>&1; el hlm $v $?
done
PYTHONPATH=$NEW timeout 100 python3 scripts/bench/host_latency.py --weights /tmp/t82.pb.gz --sizes 1 --batches 500 --calls > $O/hl_t82_new_calls.txt 2>&1
PYTHONPATH=$NEW timeout 150 python3 scripts/bench/graph_replay.py --weights /tmp/t82.pb.gz --variants ";" --sizes 1,2,4 --rounds 4 --replays 300 > $O/replay.txt 2>&1; el replay
python3 /dev/stdin $O > $O/table.txt 2>&1 <<'PY'
import json,glob,collections,statistics,sys,os
for net in ("t82","maia"):
    d=collections.defaultdict(lambda: collections.defaultdict(list))
    for f in glob.glob(os.path.join(sys.argv[1],f"bb_{net}_*.jsonl")):
        v=os.path.basename(f)[:-6].split("_")[2]
        for line in open(f):
            try: o=json.loads(line)
            except Exception: continue
            d[o["size"]][v].append(o["median_nps"])
    print(f"{net} backendbench, base 47c69fb / new, median nps of each run's 400 batches (ms a batch)")
    for b in sorted(d):
        o=d[b]["base"]; n=d[b]["new"]
        if o and n:
            mo, mn = statistics.median(o), statistics.median(n)
            print(f"{b:5d} base {mo:9.0f} ({1000*b/mo:.4f} ms) new {mn:9.0f} ({1000*b/mn:.4f} ms)  x{mn/mo:.3f}  rounds " + " ".join(f"{b2/a2:.3f}" for a2,b2 in zip(o,n)))
PY
cat $O/table.txt $O/hl_*.txt $O/replay.txt $O/info.txt
cd $OUT && tar czf a.tgz a && rm -rf a
