#!/usr/bin/env bash
# fused Winograd step: SE fc1 with 4 outputs per pass. A = HEAD (.whl/oldtree), B = this tree.
# GPU residual tests + verify (B), kernel profiles A/B, same-run backendbench A/B + PyTorch peer.
set -u
R=$OUT/r; mkdir -p $R
( while sleep 20; do tar -czf $OUT/partial.tgz -C $OUT r 2>/dev/null; done ) &
mkdir -p /tmp/site && tar -xJf .whl/numba312.tar.xz -C /tmp/site
export NUMBA_CACHE_DIR=/tmp/nbcache PYTHONUNBUFFERED=1
PB=/tmp/site:$PWD/.whl/site:$PWD; PA=/tmp/site:$PWD/.whl/site:$PWD/.whl/oldtree
L=$R/fc1.log
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; echo "A = ${A:-?} (.whl/oldtree), B = ${C:-?}"; } >$L
f=/tmp/res-20x256.pb.gz
PYTHONPATH=$PB python3 -m lc0py make-net --preset res-20x256 -o $f >>$L 2>&1
echo "=== GPU residual tests (B)" >>$L
PYTHONPATH=$PB LC0PY_KERNEL_CACHE=/tmp/kB timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider tests/backends/gpu/test_gpu_residual.py 2>&1 | tail -3 >>$L
echo "=== verify (B)" >>$L
for net in $f .nets/maia-1100.pb.gz .nets/meangirl-8.pb.gz; do for b in cuda-fp16 cuda; do
  PYTHONPATH=$PB LC0PY_KERNEL_CACHE=/tmp/kB timeout 60 python3 -m lc0py verify -w $net --backend $b -o winograd=on --batch 8 --seed 11 2>&1 | grep -E "PASS|FAIL|rror" | sed "s|^|$(basename $net) $b: |" >>$L
done; done
for side in A B; do
  P=$PB; [ $side = A ] && P=$PA
  echo "=== profile $side" >>$L
  PYTHONPATH=$P LC0PY_KERNEL_CACHE=/tmp/k$side timeout 80 python3 scripts/bench/gpu_kernel_profile.py --weights $f --batch 1024 --top 4 2>/dev/null >>$L
done
date -u >>$L
for r in 1 2 3; do for side in A B; do
  P=$PB; [ $side = A ] && P=$PA
  PYTHONPATH=$P LC0PY_KERNEL_CACHE=/tmp/k$side timeout 100 python3 -m lc0py backendbench -w $f -b cuda-fp16 -o max_batch=1024 --batch-sizes 64,256,1024 --batches 30 --json 2>>$R/bb.err \
    | sed "s|^{|{\"side\": \"$side\", \"round\": $r, |" >>$R/ab.jsonl
done; done
echo "=== peer" >>$L
PYTHONPATH=$PB timeout 150 python3 scripts/compare/peer_torch.py --weights $f --sizes 64,256,1024 >$R/peer.jsonl 2>>$R/peer.err; cat $R/peer.jsonl >>$L
python3 - $R/ab.jsonl $R/peer.jsonl >>$L <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
peer = {d["batch"]: d["nps"] for d in (json.loads(l) for l in open(sys.argv[2]) if l.startswith("{")) if "batch" in d}
for size in sorted({r["size"] for r in rows}):
    med = {s: statistics.median([r["nps"] for r in rows if r["size"] == size and r["side"] == s]) for s in ("A", "B")}
    p = peer.get(size)
    print("res-20x256", size, {k: round(v) for k, v in med.items()}, "B/A", round(med["B"] / med["A"], 3),
          "peer", round(p) if p else None, "B/peer", round(med["B"] / p, 3) if p else None)
PY
date -u >>$L
kill %1 2>/dev/null; tar -czf $OUT/fc1.tgz -C $OUT r; rm -f $OUT/partial.tgz
