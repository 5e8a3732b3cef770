#!/usr/bin/env bash
# fused Winograd: correctness (GPU tests, verify), registers, same-run A/B against the tree before (A)
set -u
R=$OUT/r; mkdir -p $R
( while sleep 20; do tar -czf $OUT/partial.tgz -C $OUT r 2>/dev/null; done ) &
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1
L=$R/fused2.log
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; echo "B = tree ${C:-?} (fused Winograd), A = 9ff1ce1 (.whl/oldtree)"; } >$L
for preset in res-20x256 t78; do f=/tmp/$preset.pb.gz; [ -f $f ] || python3 -m lc0py make-net --preset $preset -o $f >>$L 2>&1; done
echo "=== registers" >>$L
LC0PY_KERNEL_CACHE=/tmp/kB python3 - >>$L 2>&1 <<'PY'
from cuda.bindings import driver as d
from lc0py.backends.gpu.cuda_platform import CudaPlatform
from lc0py.backends.gpu.network import GpuNetwork
from lc0py.weights.presets import random_network
p = CudaPlatform(0)
for fp16 in (True, False):
    g = GpuNetwork(p, random_network("res-20x256", 1, blocks=1), fp16=fp16, graphs=False, max_batch=8, winograd=True)
    for name in ("k_wino_fused", "k_wino_in", "k_wino_out", "k_se"):
        f = getattr(g.ops, name)
        a = {k: d.cuFuncGetAttribute(getattr(d.CUfunction_attribute, k), f)[1] for k in ("CU_FUNC_ATTRIBUTE_NUM_REGS", "CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES", "CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK")}
        print("fp16" if fp16 else "fp32", name, a)
    g.close()
p.close()
PY
echo "=== GPU residual tests (B)" >>$L
LC0PY_KERNEL_CACHE=/tmp/kB timeout 240 python3 -m pytest -q -m gpu -p no:cacheprovider tests/backends/gpu/test_gpu_residual.py 2>&1 | tail -4 >>$L
echo "=== verify (B)" >>$L
for f in /tmp/res-20x256.pb.gz .nets/maia-1100.pb.gz; do for b in cuda-fp16 cuda; do for w in auto on; do
  LC0PY_KERNEL_CACHE=/tmp/kB timeout 120 python3 -m lc0py verify -w $f --backend $b -o winograd=$w --batch 8 --seed 7 2>&1 | grep -E "PASS|FAIL|rror" | sed "s|^|$(basename $f) $b winograd=$w: |" >>$L
done; done; done
date -u >>$L
LC0PY_KERNEL_CACHE=/tmp/kB timeout 100 python3 scripts/bench/gpu_kernel_profile.py --weights /tmp/res-20x256.pb.gz --batch 1024 --top 8 >>$L 2>&1
echo "=== peer res-20x256" >>$L
timeout 200 python3 scripts/compare/peer_torch.py --weights /tmp/res-20x256.pb.gz --sizes 64,256,1024 >$R/peer_res.jsonl 2>>$R/peer.err; cat $R/peer_res.jsonl >>$L
date -u >>$L
for net in /tmp/res-20x256.pb.gz /tmp/t78.pb.gz .nets/maia-1100.pb.gz; do
  for r in 1 2; do for side in A B Bw; do
    o=max_batch=1024
    if [ $side = A ]; then PP=$PWD/.whl/site:$PWD/.whl/oldtree; else PP=$PWD/.whl/site:$PWD; fi
    [ $side = Bw ] && o=$o,winograd=on
    [ $side = Bw ] && [ $net != .nets/maia-1100.pb.gz ] && continue
    PYTHONPATH=$PP LC0PY_KERNEL_CACHE=/tmp/k$side timeout 150 python3 -m lc0py backendbench -w $net -b cuda-fp16 -o $o --batch-sizes 64,256,1024 --batches 30 --json 2>>$R/bb.err \
      | sed "s|^{|{\"net\": \"$(basename $net .pb.gz)\", \"side\": \"$side\", \"round\": $r, |" >>$R/ab.jsonl
  done; done
done
python3 - $R/ab.jsonl >>$L <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
for net in dict.fromkeys(r["net"] for r in rows):
    for size in sorted({r["size"] for r in rows if r["net"] == net}):
        med = {}
        for side in ("A", "B", "Bw"):
            v = [r["nps"] for r in rows if r["net"] == net and r["size"] == size and r["side"] == side]
            if v: med[side] = statistics.median(v)
        print(net, size, {k: round(v) for k, v in med.items()}, {k: round(v / med["A"], 3) for k, v in med.items() if k != "A"})
PY
date -u >>$L
date -u >>$L
kill %1 2>/dev/null; tar -czf $OUT/dev2.tgz -C $OUT r; rm -f $OUT/partial.tgz
