#!/usr/bin/env bash
# stop 20, call 3: policy_gather / gather_bias / expand_planes on (position, part) grids against the
# previous tree (.dev/oldpkg = e74f198's lc0py): CUPTI kernel profiles, backendbench A/B (old/new
# alternated), verify on three nets
set -u
ROOT=$PWD
export PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
NEWP=$ROOT/.whl/site:$ROOT OLDP=$ROOT/.whl/site:$ROOT/.dev/oldpkg
O=$OUT/h; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C (old: e74f198)"; nproc; } > $O/info.txt 2>&1
cp .dev/call39.sh $O/call.sh
PYTHONPATH=$NEWP timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1; el make-net
M=.nets/maia-1900.pb.gz; G=.nets/meangirl-8.pb.gz
for v in new old; do
  if [ $v = new ]; then P=$NEWP; else P=$OLDP; fi
  for b in 1 32; do PYTHONPATH=$P timeout 60 python3 scripts/bench/gpu_kernel_profile.py --weights /tmp/t82.pb.gz --batch $b --top 30 > $O/profile_t82_b${b}_$v.txt 2>&1; done
  PYTHONPATH=$P timeout 60 python3 scripts/bench/gpu_kernel_profile.py --weights $M --batch 64 --top 30 > $O/profile_maia_b64_$v.txt 2>&1
done; el profiles
for r in 1 2; do
  if [ $r = 1 ]; then order="old new"; else order="new old"; fi
  for v in $order; do
    if [ $v = new ]; then P=$NEWP; else P=$OLDP; fi
    (cd /tmp && PYTHONPATH=$P timeout 70 python3 -m lc0py backendbench -w /tmp/t82.pb.gz -b cuda-fp16 --batch-sizes 1,4,16,32,64,256 --batches 300 --json > $O/bb_t82_${v}_$r.jsonl 2>>$O/bb.err)
    (cd /tmp && PYTHONPATH=$P timeout 60 python3 -m lc0py backendbench -w $ROOT/$M -b cuda-fp16 --batch-sizes 1,16,64,256 --batches 300 --json > $O/bb_maia_${v}_$r.jsonl 2>>$O/bb.err)
    [ $r = 1 ] && (cd /tmp && PYTHONPATH=$P timeout 60 python3 -m lc0py backendbench -w $ROOT/$G -b cuda-fp16 --batch-sizes 1,16,64,256 --batches 300 --json > $O/bb_meangirl_${v}_$r.jsonl 2>>$O/bb.err)
  done
done; el backendbench
for w in /tmp/t82.pb.gz $M $G; do
  n=$(basename $w .pb.gz); PYTHONPATH=$NEWP timeout 90 python3 -m lc0py verify -w $w -b cuda-fp16 > $O/verify_$n.txt 2>&1; echo "verify $n rc $?" >> $O/info.txt
done; el verify
cd $OUT && tar czf h.tgz h && rm -rf h
