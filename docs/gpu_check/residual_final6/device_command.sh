#!/usr/bin/env bash
# Issue 11, this stop's end state: like-for-like e2e (residual_h100b/e2e.py) of res-20x256 for main
# before this stop (M: .whl/old_fd71 = `git archive fd71e7d lc0py kernels`) and this tree (N), in
# M N N M order, 2 rounds, with the PyTorch peer (scripts/compare/peer_torch.py) after each round; then t82
# backendbench M/N as the no-regression check (its kernels are untouched).
#   C=<commit> bash docs/gpu_check/residual_final6/device_command.sh
set -u
R=$OUT/r; mkdir -p $R; D=docs/gpu_check
mkdir -p /tmp/site && tar -xJf .whl/numba312.tar.xz -C /tmp/site
SITE=/tmp/site:$PWD/.whl/site
export NUMBA_CACHE_DIR=/tmp/nbcache PYTHONUNBUFFERED=1
L=$R/final6.log
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u; echo "tree ${C:-?}; M = fd71e7d"; } >$L
f=/tmp/res-20x256.pb.gz; t=/tmp/t82.pb.gz
PYTHONPATH=$SITE:$PWD python3 -m lc0py make-net --preset res-20x256 -o $f >/dev/null 2>&1
PYTHONPATH=$SITE:$PWD python3 -m lc0py make-net --preset t82 -o $t >/dev/null 2>&1
run() {  # side script args...
  local side=$1; shift; local pp=$SITE:$PWD kc=/tmp/kcN
  [ $side = M ] && pp=$SITE:$PWD/.whl/old_fd71 && kc=/tmp/kcM
  PYTHONPATH=$pp LC0PY_KERNEL_CACHE=$kc timeout 120 python3 "$@" 2>>$R/err | sed "s|^{|{\"side\": \"$side\", |" >>$L
}
for r in 1 2; do
  for side in M N N M; do run $side $D/residual_h100b/e2e.py $f 64,256,1024; done
  PYTHONPATH=$SITE:$PWD timeout 150 python3 scripts/compare/peer_torch.py --weights $f --sizes 64,256,1024 2>>$R/peer.err | sed 's|^{|{"side": "peer", |' >>$L
done
for side in M N N M; do run $side -m lc0py backendbench -w $t -b cuda-fp16 -o max_batch=1024 --batch-sizes 256,1024 --batches 30 --json; done
python3 - $L >>$L <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
e2e = [r for r in rows if "batch" in r and "nps" in r]
for b in (64, 256, 1024):
    med = {s: statistics.median([r["nps"] for r in e2e if r["side"] == s and r["batch"] == b]) for s in ("M", "N", "peer")}
    print("res-20x256 e2e", b, {k: round(v) for k, v in med.items()}, "N/M", round(med["N"] / med["M"], 3),
          "N/peer", round(med["N"] / med["peer"], 3), "M/peer", round(med["M"] / med["peer"], 3))
bb = [r for r in rows if "size" in r]
for b in (256, 1024):
    med = {s: statistics.median([r["nps"] for r in bb if r["side"] == s and r["size"] == b]) for s in ("M", "N")}
    print("t82 backendbench", b, {k: round(v) for k, v in med.items()}, "N/M", round(med["N"] / med["M"], 3))
PY
date -u >>$L
