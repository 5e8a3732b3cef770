#!/usr/bin/env bash
# Issue 11: does the staged step now pay at batches below winograd_staged=auto's threshold (two
# positions per resident block, 264 on an H100)? Like-for-like e2e of res-20x256 at 128/192/256 with
# winograd_staged=auto (the split kernel there) and =on, alternating, 3 rounds; this tree's GPU
# residual and runner tests first.
#   C=<commit> bash docs/gpu_check/residual_stage256/device_command.sh
set -u
R=$OUT/r; mkdir -p $R; D=docs/gpu_check
mkdir -p /tmp/site && tar -xJf .whl/numba312.tar.xz -C /tmp/site
export PYTHONPATH=/tmp/site:$PWD/.whl/site:$PWD NUMBA_CACHE_DIR=/tmp/nbcache PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/kcB
L=$R/stage.log
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u; echo "tree ${C:-?}"; } >$L
f=/tmp/res-20x256.pb.gz
python3 -m lc0py make-net --preset res-20x256 -o $f >/dev/null 2>&1
echo "=== GPU residual + runner tests" >>$L
timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/backends/gpu/test_gpu_residual.py tests/backends/gpu/test_runner.py 2>&1 | tail -2 >>$L
for r in 1 2 3; do
  timeout 90 python3 $D/residual_h100b/e2e.py $f 128,192,256 | sed 's|^{|{"side": "auto", |' >>$L
  timeout 90 python3 $D/residual_h100b/e2e.py $f 128,192,256 winograd_staged=on | sed 's|^{|{"side": "on", |' >>$L
done
python3 - $L >>$L <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{") and '"batch"' in l]
for b in (128, 192, 256):
    med = {s: statistics.median([r["nps"] for r in rows if r["side"] == s and r["batch"] == b]) for s in ("auto", "on")}
    print("res-20x256", b, {k: round(v) for k, v in med.items()}, "on/auto", round(med["on"] / med["auto"], 3))
PY
date -u >>$L
