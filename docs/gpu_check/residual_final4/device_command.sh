#!/usr/bin/env bash
# Issue 11's throughput targets, like for like: this tree and the PyTorch peer timed the same way
# (a batch of random positions built once; per batch H2D, forward, D2H; median of 30), same call,
# for res-20x256 (defaults and winograd_staged=off) and t78, 2 alternating rounds.
#   C=<commit> bash docs/gpu_check/residual_final4/device_command.sh
set -u
R=$OUT/r; mkdir -p $R
mkdir -p /tmp/site && tar -xJf .whl/numba312.tar.xz -C /tmp/site
export NUMBA_CACHE_DIR=/tmp/nbcache PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/kcN PYTHONPATH=/tmp/site:$PWD/.whl/site:$PWD
L=$R/final4.log
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u; echo "tree ${C:-?}"; } >$L
f=/tmp/res-20x256.pb.gz; t=/tmp/t78.pb.gz
python3 -m lc0py make-net --preset res-20x256 -o $f >/dev/null 2>&1
python3 -m lc0py make-net --preset t78 -o $t >/dev/null 2>&1
for r in 1 2; do
  timeout 80 python3 docs/gpu_check/residual_h100b/e2e.py $f 64,256,1024 | sed 's|^{|{"net": "res-20x256", "side": "A", |' >>$L
  timeout 80 python3 docs/gpu_check/residual_h100b/e2e.py $f 64,256,1024 winograd_staged=off | sed 's|^{|{"net": "res-20x256", "side": "S", |' >>$L
  timeout 100 python3 scripts/compare/peer_torch.py --weights $f --sizes 64,256,1024 2>>$R/peer.err | sed 's|^{|{"net": "res-20x256", "side": "peer", |' >>$L
  timeout 100 python3 docs/gpu_check/residual_h100b/e2e.py $t 64,256,1024 | sed 's|^{|{"net": "t78", "side": "A", |' >>$L
  timeout 150 python3 scripts/compare/peer_torch.py --weights $t --sizes 64,256,1024 2>>$R/peer.err | sed 's|^{|{"net": "t78", "side": "peer", |' >>$L
done
python3 - $L >>$L <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{") and '"batch"' in l]
for net in ("res-20x256", "t78"):
    for b in (64, 256, 1024):
        med = {s: statistics.median([r["nps"] for r in rows if r["net"] == net and r["side"] == s and r["batch"] == b])
               for s in ("A", "S", "peer") if any(r["net"] == net and r["side"] == s and r["batch"] == b for r in rows)}
        print(net, b, {k: round(v) for k, v in med.items()}, {k: round(v / med["peer"], 3) for k, v in med.items() if k != "peer"})
PY
date -u >>$L
