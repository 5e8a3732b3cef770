#!/usr/bin/env bash
# winograd_blocks: the direct fused kernel compiled for 3 / 4 blocks per SM (0 = default) on res-20x256.
set -u
R=$OUT/r; mkdir -p $R
( while sleep 15; do tar -czf $OUT/partial.tgz -C $OUT r 2>/dev/null; done ) &
mkdir -p /tmp/site && tar -xJf .whl/numba312.tar.xz -C /tmp/site
export PYTHONPATH=/tmp/site:$PWD/.whl/site:$PWD NUMBA_CACHE_DIR=/tmp/nbcache PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/kc
L=$R/blocks.log
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; echo "tree ${C:-?}"; } >$L
f=/tmp/res-20x256.pb.gz
python3 -m lc0py make-net --preset res-20x256 -o $f >>$L 2>&1
for n in 3 4; do for b in cuda-fp16 cuda; do
  timeout 40 python3 -m lc0py verify -w $f --backend $b -o winograd_blocks=$n --batch 8 --seed 17 2>&1 | grep -E "PASS|FAIL|rror" | sed "s|^|res-20x256 $b blocks=$n: |" >>$L
done; done
timeout 40 python3 -m lc0py verify -w .nets/maia-1100.pb.gz --backend cuda-fp16 -o winograd=on,winograd_blocks=4 --batch 8 --seed 17 2>&1 | grep -E "PASS|FAIL|rror" | sed "s|^|maia-1100 fp16 blocks=4: |" >>$L
for r in 1 2; do for n in 0 3 4; do
  timeout 40 python3 -m lc0py backendbench -w $f -b cuda-fp16 -o max_batch=1024,winograd_blocks=$n --batch-sizes 64,256,1024 --batches 30 --json 2>>$R/bb.err \
    | sed "s|^{|{\"blocks\": $n, \"round\": $r, |" >>$R/ab.jsonl
done; done
python3 - $R/ab.jsonl >>$L <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
for size in sorted({r["size"] for r in rows}):
    med = {n: statistics.median([r["nps"] for r in rows if r["size"] == size and r["blocks"] == n]) for n in (0, 3, 4)}
    print("res-20x256", size, {k: round(v) for k, v in med.items()}, "3/0", round(med[3] / med[0], 3), "4/0", round(med[4] / med[0], 3))
PY
date -u >>$L
kill %1 2>/dev/null; rm -f $OUT/partial.tgz
