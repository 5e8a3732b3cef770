#!/usr/bin/env bash
# Issue 11 on the H100, second call: where res-20x256's time goes now (kernel profile, split and
# staged), the like-for-like end-to-end figure against the PyTorch peer (e2e.py), t78 against main
# and its peer, and T82 against main (the runner's new wait). Sides as in ../residual_h100.
#   C=<commit> bash docs/gpu_check/residual_h100b/device_command.sh
set -u
R=$OUT/r; mkdir -p $R
( while sleep 20; do tar -czf $OUT/partial.tgz -C $OUT r 2>/dev/null; done ) &
mkdir -p /tmp/site && tar -xJf .whl/numba312.tar.xz -C /tmp/site
SITE=/tmp/site:$PWD/.whl/site
export NUMBA_CACHE_DIR=/tmp/nbcache PYTHONUNBUFFERED=1 PYTHONPATH=$SITE:$PWD LC0PY_KERNEL_CACHE=/tmp/kcN
L=$R/h100b.log
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u; echo "tree ${C:-?}"; } >$L
f=/tmp/res-20x256.pb.gz; t=/tmp/t78.pb.gz; t82=/tmp/t82.pb.gz
python3 -m lc0py make-net --preset res-20x256 -o $f >/dev/null 2>&1
python3 -m lc0py make-net --preset t78 -o $t >/dev/null 2>&1
python3 -m lc0py make-net --preset t82 -o $t82 >/dev/null 2>&1
for spec in "256 -" "1024 -" "1024 winograd_staged=on"; do
  set -- $spec; o=""; [ "$2" != "-" ] && o="--backend-opts $2"
  echo "=== kernel profile res-20x256 batch $1 $2" >>$L
  timeout 120 python3 scripts/bench/gpu_kernel_profile.py --weights $f --batch $1 $o --top 8 2>&1 | grep -v Warn | grep -v _warn >>$L
done
echo "=== e2e (timed as the peer) and the peer, res-20x256" >>$L
timeout 90 python3 docs/gpu_check/residual_h100b/e2e.py $f 64,256,1024 >>$L 2>>$R/e2e.err
timeout 90 python3 docs/gpu_check/residual_h100b/e2e.py $f 64,256,1024 winograd_staged=on >>$L 2>>$R/e2e.err
timeout 120 python3 scripts/compare/peer_torch.py --weights $f --sizes 64,256,1024 >>$L 2>>$R/peer.err
bb() {  # side net opts sizes batches tag
  local side=$1 net=$2 opts=$3 sizes=$4 n=$5 tag=$6 pp=$SITE:$PWD kc=/tmp/kcN
  [ $side = M ] && pp=$SITE:$PWD/.whl/oldtree && kc=/tmp/kcM
  PYTHONPATH=$pp LC0PY_KERNEL_CACHE=$kc timeout 150 python3 -m lc0py backendbench -w $net -b cuda-fp16 -o $opts --batch-sizes $sizes --batches $n --json 2>>$R/bb.err \
    | sed "s|^{|{\"side\": \"$side\", \"tag\": \"$tag\", |" >>$R/ab.jsonl
}
for r in 1 2; do bb M $t max_batch=1024 64,256,1024 15 t78; bb S $t max_batch=1024 64,256,1024 15 t78; done
for r in 1 2; do bb M $t82 max_batch=1024 64,256,1024 30 t82; bb S $t82 max_batch=1024 64,256,1024 30 t82; done
timeout 200 python3 scripts/compare/peer_torch.py --weights $t --sizes 64,256,1024 >$R/peer_t78.jsonl 2>>$R/peer.err; cat $R/peer_t78.jsonl >>$L
python3 docs/gpu_check/residual_h100/summary.py $R/ab.jsonl $R/peer_t78.jsonl >>$L
date -u >>$L
kill %1 2>/dev/null; rm -f $OUT/partial.tgz
