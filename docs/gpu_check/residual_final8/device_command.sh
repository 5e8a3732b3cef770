#!/usr/bin/env bash
# Issue 11, ninth stop, the end state after the plain build (049ac1f): like-for-like e2e (residual_h100b/e2e.py) of res-20x256 for main
# before this stop (M: .whl/old_main = `git archive da6b3e5 lc0py kernels`) and this tree (N, its
# defaults: se_gates=auto), in M N N M order, 2 rounds, the PyTorch peer (scripts/compare/peer_torch.py)
# after each round; t78 M N and its peer once; then t82 backendbench M N N M (no regression).
# First the GPU residual tests of this tree.
#   C=<commit> bash docs/gpu_check/residual_final8/device_command.sh
set -u
R=$OUT/r; mkdir -p $R; D=docs/gpu_check
mkdir -p /tmp/site && tar -xJf .whl/numba312.tar.xz -C /tmp/site
SITE=/tmp/site:$PWD/.whl/site
export NUMBA_CACHE_DIR=/tmp/nbcache PYTHONUNBUFFERED=1
L=$R/final8.log
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u; echo "tree ${C:-?}; M = da6b3e5"; } >$L
f=/tmp/res-20x256.pb.gz; t=/tmp/t82.pb.gz; t78=/tmp/t78.pb.gz
for p in "res-20x256 $f" "t82 $t" "t78 $t78"; do set -- $p; PYTHONPATH=$SITE:$PWD python3 -m lc0py make-net --preset $1 -o $2 >/dev/null 2>&1; done
run() {  # side net script args...
  local side=$1 net=$2; shift 2; local pp=$SITE:$PWD kc=/tmp/kcN
  [ $side = M ] && pp=$SITE:$PWD/.whl/old_main && kc=/tmp/kcM
  PYTHONPATH=$pp LC0PY_KERNEL_CACHE=$kc timeout 120 python3 "$@" 2>>$R/err | sed "s|^{|{\"side\": \"$side\", \"net\": \"$net\", |" >>$L
}
peer() { PYTHONPATH=$SITE:$PWD timeout 200 python3 scripts/compare/peer_torch.py --weights $2 --sizes $3 2>>$R/peer.err | sed "s|^{|{\"side\": \"peer\", \"net\": \"$1\", |" >>$L; }
echo "=== pytest (GPU residual tests, this tree)" >>$L
PYTHONPATH=$SITE:$PWD LC0PY_KERNEL_CACHE=/tmp/kcN timeout 200 python3 -m pytest -q -p no:cacheprovider tests/backends/gpu/test_gpu_residual.py 2>&1 | tail -4 >>$L
for r in 1 2; do
  for side in M N N M; do run $side res $D/residual_h100b/e2e.py $f 64,256,1024; done
  peer res $f 64,256,1024
done
for side in M N; do run $side t78 $D/residual_h100b/e2e.py $t78 256,1024; done
peer t78 $t78 256,1024
for side in M N N M; do run $side t82 -m lc0py backendbench -w $t -b cuda-fp16 -o max_batch=1024 --batch-sizes 256,1024 --batches 30 --json; done
python3 - $L >>$L <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
def med(net, side, b, key="batch"):
    v = [r["nps"] for r in rows if r["net"] == net and r["side"] == side and r.get(key) == b]
    return statistics.median(v) if v else float("nan")
for net, sizes in (("res", (64, 256, 1024)), ("t78", (256, 1024))):
    for b in sizes:
        m, n, p = med(net, "M", b), med(net, "N", b), med(net, "peer", b)
        print(net, "e2e", b, {"M": round(m), "N": round(n), "peer": round(p)}, "N/M", round(n / m, 3),
              "N/peer", round(n / p, 3), "M/peer", round(m / p, 3))
for b in (256, 1024):
    m, n = med("t82", "M", b, "size"), med("t82", "N", b, "size")
    print("t82 backendbench", b, {"M": round(m), "N": round(n)}, "N/M", round(n / m, 3))
PY
date -u >>$L
