#!/usr/bin/env bash
# Issue 11, this session's last H100 call: every GPU test, verify on the defaults, and the
# same-run A/B of main before this session (M, .whl/oldtree), the split kernel alone
# (S = winograd_staged=off) and the defaults (A = winograd_staged=auto) at 64..1024, with the
# PyTorch peer in the same call. Carry .whl (numba312.tar.xz, site/, oldtree/) and .nets.
#   C=<commit> bash docs/gpu_check/residual_final/device_command.sh
set -u
R=$OUT/r; mkdir -p $R
( while sleep 20; do tar -czf $OUT/partial.tgz -C $OUT r 2>/dev/null; done ) &
mkdir -p /tmp/site && tar -xJf .whl/numba312.tar.xz -C /tmp/site
SITE=/tmp/site:$PWD/.whl/site
export NUMBA_CACHE_DIR=/tmp/nbcache PYTHONUNBUFFERED=1 PYTHONPATH=$SITE:$PWD LC0PY_KERNEL_CACHE=/tmp/kcN
L=$R/final.log
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u; echo "tree ${C:-?}"; } >$L
f=/tmp/res-20x256.pb.gz
python3 -m lc0py make-net --preset res-20x256 -o $f >/dev/null 2>&1
echo "=== every GPU test (pytest -m gpu tests)" >>$L
timeout 280 python3 -m pytest -q -m gpu -p no:cacheprovider tests 2>&1 | tail -4 >>$L
echo "=== verify, defaults" >>$L
for spec in "$f cuda-fp16" "$f cuda" ".nets/maia-1100.pb.gz cuda-fp16" ".nets/maia-1100.pb.gz cuda" ".nets/meangirl-8.pb.gz cuda-fp16" ".nets/meangirl-8.pb.gz cuda"; do
  set -- $spec
  timeout 90 python3 -m lc0py verify -w $1 --backend $2 --batch 8 --seed 31 2>&1 | grep -E "PASS|FAIL|rror" | sed "s|^|$(basename $1) $2: |" >>$L
done
bb() {  # side net opts sizes batches tag
  local side=$1 net=$2 opts=$3 sizes=$4 n=$5 tag=$6 pp=$SITE:$PWD kc=/tmp/kcN
  [ $side = M ] && pp=$SITE:$PWD/.whl/oldtree && kc=/tmp/kcM
  PYTHONPATH=$pp LC0PY_KERNEL_CACHE=$kc timeout 150 python3 -m lc0py backendbench -w $net -b cuda-fp16 -o $opts --batch-sizes $sizes --batches $n --json 2>>$R/bb.err \
    | sed "s|^{|{\"side\": \"$side\", \"tag\": \"$tag\", |" >>$R/ab.jsonl
}
for r in 1 2 3; do
  bb M $f max_batch=1024 64,128,256,512,1024 30 res
  bb S $f max_batch=1024,winograd_staged=off 64,128,256,512,1024 30 res
  bb A $f max_batch=1024 64,128,256,512,1024 30 res
done
timeout 150 python3 scripts/compare/peer_torch.py --weights $f --sizes 64,128,256,512,1024 >$R/peer_res.jsonl 2>>$R/peer.err; cat $R/peer_res.jsonl >>$L
python3 docs/gpu_check/residual_h100/summary.py $R/ab.jsonl $R/peer_res.jsonl >>$L
date -u >>$L
kill %1 2>/dev/null; rm -f $OUT/partial.tgz
