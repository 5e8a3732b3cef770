#!/usr/bin/env bash
# Issue 11: se_gates with the second convolution's GEMMs on fewer multiprocessors (cuBLAS SM count
# target) so the side stream's gates run beside them. res-20x256 e2e, spare = -1 (se_gates off),
# 0, 8, 16, 32, in that order and back, 2 rounds; verify with spare 8 (the default); GPU tests.
#   C=<commit> bash docs/gpu_check/residual_segates3/device_command.sh
set -u
R=$OUT/r; mkdir -p $R; D=docs/gpu_check
mkdir -p /tmp/site && tar -xJf .whl/numba312.tar.xz -C /tmp/site
export PYTHONPATH=/tmp/site:$PWD/.whl/site:$PWD NUMBA_CACHE_DIR=/tmp/nbcache PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/kcB
L=$R/segates3.log
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u; echo "tree ${C:-?}"; } >$L
f=/tmp/res-20x256.pb.gz
python3 -m lc0py make-net --preset res-20x256 -o $f >/dev/null 2>&1
echo "=== verify" >>$L
for spec in "$f cuda-fp16 se_gates=on" "$f cuda se_gates=on"; do
  set -- $spec
  timeout 60 python3 -m lc0py verify -w $1 --backend $2 -o $3 --batch 8 --seed 23 2>&1 | grep -E "PASS|FAIL|rror" | sed "s|^|$(basename $1) $2 $3: |" >>$L
done
echo "=== pytest" >>$L
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/backends/gpu/test_gpu_residual.py -k "se_gates or real" 2>&1 | tail -5 >>$L
echo "=== e2e" >>$L
for r in 1 2; do
  for sp in -1 0 8 16 32 32 16 8 0 -1; do
    timeout 60 python3 $D/residual_segates3/spare.py $f 128,256,512,1024 $sp 2>>$R/err >>$L
  done
done
python3 - $L >>$L <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
for b in (128, 256, 512, 1024):
    med = {s: statistics.median([r["nps"] for r in rows if r["spare"] == s and r["batch"] == b]) for s in (-1, 0, 8, 16, 32)}
    print("res-20x256 e2e", b, {k: round(v) for k, v in med.items()}, "x/off", {k: round(v / med[-1], 3) for k, v in med.items()})
PY
date -u >>$L
