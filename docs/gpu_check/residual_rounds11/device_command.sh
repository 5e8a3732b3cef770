#!/usr/bin/env bash
# Issue 11, eleventh stop: the final tree against the PyTorch peer in alternating rounds (the peer
# spread 121-129k nps at 1024 between today's calls): 3 x (like-for-like e2e, residual_h100b/e2e.py;
# scripts/compare/peer_torch.py) on res-20x256 at 256 and 1024, then the medians and their ratio.
#   C=<commit> bash docs/gpu_check/residual_rounds11/device_command.sh
set -u
R=$OUT/r; mkdir -p $R; D=docs/gpu_check
mkdir -p /tmp/site && tar -xJf .whl/numba312.tar.xz -C /tmp/site
export NUMBA_CACHE_DIR=/tmp/nbcache PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/kc PYTHONPATH=/tmp/site:$PWD/.whl/site:$PWD
L=$R/rounds.log
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u; echo "tree ${C:-?}"; } >$L
f=/tmp/res-20x256.pb.gz
python3 -m lc0py make-net --preset res-20x256 -o $f >/dev/null 2>&1
for r in 1 2 3; do
  timeout 60 python3 $D/residual_h100b/e2e.py $f 256,1024 2>>$R/err | sed 's|^{|{"side": "lc0py", |' >>$L
  timeout 120 python3 scripts/compare/peer_torch.py --weights $f --sizes 256,1024 2>>$R/peer.err | sed 's|^{|{"side": "peer", |' >>$L
done
python3 - $L >>$L <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{") and "batch" in l]
for b in (256, 1024):
    ours = [r["nps"] for r in rows if r["side"] == "lc0py" and r["batch"] == b]
    peer = [r["nps"] for r in rows if r["side"] == "peer" and r["batch"] == b]
    print(b, "lc0py", [round(x) for x in ours], "peer", [round(x) for x in peer],
          "median ratio", round(statistics.median(ours) / statistics.median(peer), 3),
          "worst (min ours / max peer)", round(min(ours) / max(peer), 3))
PY
date -u >>$L
