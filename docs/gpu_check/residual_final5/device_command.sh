#!/usr/bin/env bash
# Issue 11: res-20x256 against the PyTorch peer at 256 and 1024 only, like for like (as
# ../residual_final4), 4 alternating rounds, to narrow the spread around the 1.2x target.
#   C=<commit> bash docs/gpu_check/residual_final5/device_command.sh
set -u
R=$OUT/r; mkdir -p $R
mkdir -p /tmp/site && tar -xJf .whl/numba312.tar.xz -C /tmp/site
export NUMBA_CACHE_DIR=/tmp/nbcache PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/kcN PYTHONPATH=/tmp/site:$PWD/.whl/site:$PWD
L=$R/final5.log
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u; echo "tree ${C:-?}"; } >$L
f=/tmp/res-20x256.pb.gz
python3 -m lc0py make-net --preset res-20x256 -o $f >/dev/null 2>&1
for r in 1 2 3 4; do
  timeout 80 python3 docs/gpu_check/residual_h100b/e2e.py $f 256,1024 | sed 's|^{|{"net": "res-20x256", "side": "A", |' >>$L
  timeout 100 python3 scripts/compare/peer_torch.py --weights $f --sizes 256,1024 2>>$R/peer.err | sed 's|^{|{"net": "res-20x256", "side": "peer", |' >>$L
done
python3 - $L >>$L <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{") and '"batch"' in l]
for b in (256, 1024):
    a = [r["nps"] for r in rows if r["side"] == "A" and r["batch"] == b]
    p = [r["nps"] for r in rows if r["side"] == "peer" and r["batch"] == b]
    print(b, "lc0py", [round(x) for x in a], "peer", [round(x) for x in p],
          "ratio of medians", round(statistics.median(a) / statistics.median(p), 3),
          "per round", [round(x / y, 3) for x, y in zip(a, p)])
PY
date -u >>$L
