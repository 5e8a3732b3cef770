#!/usr/bin/env bash
# Issue 11, eleventh stop: the side stream at the device's highest priority (ops.SIDE_HIGH_PRIORITY).
# Same tree both sides; P0 = the flag off (a sitecustomize sets it), P1 = on (the tree's default).
# Which priorities the captured graphs' kernel nodes carry; then res-20x256 like-for-like e2e
# (residual_h100b/e2e.py) P0 P1 P1 P0 in 2 rounds with the PyTorch peer after each, se_gates=on at
# 256 both sides, and t82 backendbench P0 P1 (its value heads use the side stream too).
#   C=<commit> bash docs/gpu_check/residual_prio/device_command.sh
set -u
R=$OUT/r; mkdir -p $R; D=docs/gpu_check
mkdir -p /tmp/site && tar -xJf .whl/numba312.tar.xz -C /tmp/site
SITE=/tmp/site:$PWD/.whl/site
mkdir -p /tmp/p0 && echo 'import lc0py.backends.gpu.ops as o; o.SIDE_HIGH_PRIORITY = False' >/tmp/p0/sitecustomize.py
export NUMBA_CACHE_DIR=/tmp/nbcache PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/kc
L=$R/prio.log
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u; echo "tree ${C:-?}"; } >$L
f=/tmp/res-20x256.pb.gz; t=/tmp/t82.pb.gz
for p in "res-20x256 $f" "t82 $t"; do set -- $p; PYTHONPATH=$SITE:$PWD python3 -m lc0py make-net --preset $1 -o $2 >/dev/null 2>&1; done
PYTHONPATH=$SITE:$PWD timeout 120 python3 $D/residual_prio/graph_priority.py $f >>$L 2>>$R/err
run() {  # side net args...
  local side=$1 net=$2; shift 2; local pp=$SITE:$PWD; [ $side = P0 ] && pp=/tmp/p0:$pp
  PYTHONPATH=$pp timeout 150 python3 "$@" 2>>$R/err | sed "s|^{|{\"side\": \"$side\", \"net\": \"$net\", |" >>$L
}
peer() { PYTHONPATH=$SITE:$PWD timeout 200 python3 scripts/compare/peer_torch.py --weights $2 --sizes $3 2>>$R/peer.err | sed "s|^{|{\"side\": \"peer\", \"net\": \"$1\", |" >>$L; }
for r in 1 2; do
  for side in P0 P1 P1 P0; do run $side res $D/residual_h100b/e2e.py $f 64,256,1024; done
  peer res $f 64,256,1024
done
for side in P0 P1; do run $side res-seon $D/residual_h100b/e2e.py $f 256,512 se_gates=on; done
for side in P0 P1; do run $side t82 -m lc0py backendbench -w $t -b cuda-fp16 -o max_batch=1024 --batch-sizes 256,1024 --batches 30 --json; done
python3 - $L >>$L <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
def med(net, side, b, key="batch"):
    v = [r["nps"] for r in rows if r["net"] == net and r["side"] == side and r.get(key) == b]
    return statistics.median(v) if v else float("nan")
for b in (64, 256, 1024):
    a, n, p = med("res", "P0", b), med("res", "P1", b), med("res", "peer", b)
    print("res e2e", b, {"P0": round(a), "P1": round(n), "peer": round(p)}, "P1/P0", round(n / a, 3),
          "P1/peer", round(n / p, 3), "P0/peer", round(a / p, 3))
for b in (256, 512):
    a, n = med("res-seon", "P0", b), med("res-seon", "P1", b)
    print("res se_gates=on e2e", b, {"P0": round(a), "P1": round(n)}, "P1/P0", round(n / a, 3))
for b in (256, 1024):
    a, n = med("t82", "P0", b, "size"), med("t82", "P1", b, "size")
    print("t82 backendbench", b, {"P0": round(a), "P1": round(n)}, "P1/P0", round(n / a, 3))
PY
date -u >>$L
