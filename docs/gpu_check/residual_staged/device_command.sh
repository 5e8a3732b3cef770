#!/usr/bin/env bash
# The staged fused Winograd step on a GPU (not yet run: the 2026-11-26 session had no device time).
# Run from the repository root on the device machine, carrying .whl (site/: chess, platformdirs) and
# .nets (maia-1100, meangirl-8):  C=<commit> bash docs/gpu_check/residual_staged/device_command.sh
# Writes $OUT/staged.tgz: staged.log (registers, GPU tests, verify with the option off/on, kernel
# profiles, same-run A/B backendbench winograd_staged=off (A) vs on (B), PyTorch peer) + ab.jsonl.
set -u
R=$OUT/r; mkdir -p $R
( while sleep 20; do tar -czf $OUT/partial.tgz -C $OUT r 2>/dev/null; done ) &
export PYTHONPATH=$PWD/.whl/site:$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/kc
L=$R/staged.log
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; echo "tree ${C:-?}; A = winograd_staged=off, B = on"; } >$L
f=/tmp/res-20x256.pb.gz; [ -f $f ] || python3 -m lc0py make-net --preset res-20x256 -o $f >>$L 2>&1
echo "=== registers" >>$L
python3 - >>$L 2>&1 <<'PY'
from cuda.bindings import driver as d
from lc0py.backends.gpu.cuda_platform import CudaPlatform
from lc0py.backends.gpu.network import GpuNetwork
from lc0py.weights.presets import random_network
p = CudaPlatform(0)
g = GpuNetwork(p, random_network("res-20x256", 1, blocks=1), fp16=True, graphs=False, max_batch=8, winograd=True, winograd_staged=True)
for name in ("k_wino_fused", "k_wino_staged"):
    f = getattr(g.ops, name)
    print(name, {k: d.cuFuncGetAttribute(getattr(d.CUfunction_attribute, k), f)[1] for k in ("CU_FUNC_ATTRIBUTE_NUM_REGS", "CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES", "CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK")})
print("staged smem at 256 filters:", g.ops.staged_fused_smem(256, 32, True, True), "fits:", g.ops.can_stage_fused(256, 32, True, True))
g.close(); p.close()
PY
echo "=== GPU residual tests" >>$L
timeout 300 python3 -m pytest -q -m gpu -p no:cacheprovider tests/backends/gpu/test_gpu_residual.py 2>&1 | tail -15 >>$L
echo "=== verify" >>$L
for net in $f .nets/maia-1100.pb.gz .nets/meangirl-8.pb.gz; do for st in off on; do
  timeout 120 python3 -m lc0py verify -w $net --backend cuda-fp16 -o winograd=on,winograd_staged=$st --batch 8 --seed 7 2>&1 | grep -E "PASS|FAIL|rror" | sed "s|^|$(basename $net) staged=$st: |" >>$L
done; done
for st in off on; do
  echo "=== profile winograd_staged=$st" >>$L
  timeout 100 python3 scripts/bench/gpu_kernel_profile.py --weights $f --batch 1024 --top 8 --backend-opts winograd_staged=$st >>$L 2>&1
done
echo "=== peer" >>$L
timeout 200 python3 scripts/compare/peer_torch.py --weights $f --sizes 64,256,1024 >$R/peer.jsonl 2>>$R/peer.err; cat $R/peer.jsonl >>$L
for r in 1 2 3; do for side in A B; do
  st=off; [ $side = B ] && st=on
  timeout 150 python3 -m lc0py backendbench -w $f -b cuda-fp16 -o max_batch=1024,winograd_staged=$st --batch-sizes 64,256,1024 --batches 30 --json 2>>$R/bb.err \
    | sed "s|^{|{\"side\": \"$side\", \"round\": $r, |" >>$R/ab.jsonl
done; done
python3 - $R/ab.jsonl >>$L <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
for size in sorted({r["size"] for r in rows}):
    med = {s: statistics.median([r["nps"] for r in rows if r["size"] == size and r["side"] == s]) for s in ("A", "B")}
    print("res-20x256", size, {k: round(v) for k, v in med.items()}, "B/A", round(med["B"] / med["A"], 3))
PY
date -u >>$L
kill %1 2>/dev/null; tar -czf $OUT/staged.tgz -C $OUT r; rm -f $OUT/partial.tgz
