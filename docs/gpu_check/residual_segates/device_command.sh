#!/usr/bin/env bash
# Issue 11: the SE outside the fused step (backend option se_gates). One call:
#  (second call: se_gates with 8 positions a block, the gates on the side stream)
#  1. verify on and off with the staged and split kernels, fp16 and fp32, and the two real SE nets;
#  2. the GPU tests of the gated path (test_se_gates_matches_reference: three kernels, fp16/fp32);
#  3. like-for-like e2e of res-20x256 (residual_h100b/e2e.py), se_gates off / on / on / off,
#     2 rounds, the PyTorch peer (scripts/compare/peer_torch.py) after each round;
#  4. t78 (512 filters: the direct kernel) e2e off / on / on / off;
#  5. the kernels in context (ncu, --cache-control none) at 1024 with se_gates on.
#   C=<commit> bash docs/gpu_check/residual_segates/device_command.sh
set -u
R=$OUT/r; mkdir -p $R; D=docs/gpu_check
mkdir -p /tmp/site && tar -xJf .whl/numba312.tar.xz -C /tmp/site
export PYTHONPATH=/tmp/site:$PWD/.whl/site:$PWD NUMBA_CACHE_DIR=/tmp/nbcache PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/kcB
L=$R/segates.log
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u; echo "tree ${C:-?}"; } >$L
f=/tmp/res-20x256.pb.gz
python3 -m lc0py make-net --preset res-20x256 -o $f >/dev/null 2>&1
echo "=== verify" >>$L
for spec in "$f cuda-fp16 se_gates=on,winograd_staged=on" "$f cuda-fp16 se_gates=on,winograd_staged=off" "$f cuda se_gates=on" \
            ".nets/maia-1100.pb.gz cuda-fp16 se_gates=on,winograd=on" ".nets/meangirl-8.pb.gz cuda-fp16 se_gates=on,winograd=on"; do
  set -- $spec
  timeout 60 python3 -m lc0py verify -w $1 --backend $2 -o $3 --batch 8 --seed 23 2>&1 | grep -E "PASS|FAIL|rror" | sed "s|^|$(basename $1) $2 $3: |" >>$L
done
echo "=== pytest" >>$L
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/backends/gpu/test_gpu_residual.py -k "se_gates" 2>&1 | tail -15 >>$L
echo "=== e2e" >>$L
for r in 1 2; do
  for side in off on on off; do
    timeout 90 python3 $D/residual_h100b/e2e.py $f 64,256,1024 se_gates=$side 2>>$R/err | sed "s|^{|{\"side\": \"$side\", |" >>$L
  done
  timeout 150 python3 scripts/compare/peer_torch.py --weights $f --sizes 64,256,1024 2>>$R/peer.err | sed 's|^{|{"side": "peer", |' >>$L
done
python3 - $L >>$L <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{") and '"batch"' in l and '"t78"' not in l]
for b in (64, 256, 1024):
    med = {s: statistics.median([r["nps"] for r in rows if r["side"] == s and r["batch"] == b]) for s in ("off", "on", "peer")}
    print("res-20x256 e2e", b, {k: round(v) for k, v in med.items()}, "on/off", round(med["on"] / med["off"], 3),
          "on/peer", round(med["on"] / med["peer"], 3), "off/peer", round(med["off"] / med["peer"], 3))
PY
t=/tmp/t78.pb.gz
python3 -m lc0py make-net --preset t78 -o $t >/dev/null 2>&1
for side in off on on off; do
  timeout 90 python3 $D/residual_h100b/e2e.py $t 256,1024 se_gates=$side 2>>$R/err | sed "s|^{|{\"side\": \"$side\", \"net\": \"t78\", |" >>$L
done
python3 - $L >>$L <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{") and '"t78"' in l]
for b in (256, 1024):
    med = {s: statistics.median([r["nps"] for r in rows if r["side"] == s and r["batch"] == b]) for s in ("off", "on")}
    print("t78 e2e", b, {k: round(v) for k, v in med.items()}, "on/off", round(med["on"] / med["off"], 3))
PY
for side in on; do
  timeout 80 ncu --clock-control none --cache-control none --kernel-name regex:"winograd|se_gates|gemm|nvjet" --launch-skip 300 --launch-count 12 \
    --metrics gpu__time_duration.sum,sm__inst_executed.sum --csv python3 $D/residual_gap/ncu_ctx.py $f 1024 se_gates=$side >$R/ncu_$side.csv 2>>$R/err
done
date -u >>$L
