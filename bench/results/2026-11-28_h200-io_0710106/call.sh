#!/usr/bin/env bash
# stop 20, call 4: policy_gather's dots by groups of 8 threads with 16-byte loads; CUPTI profiles;
# backendbench old (e74f198) / new, 6 alternating rounds of 150 batches at small sizes
set -u
ROOT=$PWD
export PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
NEWP=$ROOT/.whl/site:$ROOT OLDP=$ROOT/.whl/site:$ROOT/.dev/oldpkg
O=$OUT/h; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C (old: e74f198)"; nproc; } > $O/info.txt 2>&1
cp .dev/call40.sh $O/call.sh
PYTHONPATH=$NEWP timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1; el make-net
M=.nets/maia-1900.pb.gz
for v in new old; do
  if [ $v = new ]; then P=$NEWP; else P=$OLDP; fi
  for b in 1 32 256; do PYTHONPATH=$P timeout 60 python3 scripts/bench/gpu_kernel_profile.py --weights /tmp/t82.pb.gz --batch $b --top 40 > $O/profile_t82_b${b}_$v.txt 2>&1; done
  for b in 1 64; do PYTHONPATH=$P timeout 60 python3 scripts/bench/gpu_kernel_profile.py --weights $M --batch $b --top 30 > $O/profile_maia_b${b}_$v.txt 2>&1; done
done; el profiles
for r in 1 2 3 4 5 6; do
  if [ $((r % 2)) = 1 ]; then order="old new"; else order="new old"; fi
  for v in $order; do
    if [ $v = new ]; then P=$NEWP; else P=$OLDP; fi
    (cd /tmp && PYTHONPATH=$P timeout 60 python3 -m lc0py backendbench -w /tmp/t82.pb.gz -b cuda-fp16 --batch-sizes 1,4,16,32,64 --batches 150 --json > $O/bb_t82_${v}_$r.jsonl 2>>$O/bb.err)
    (cd /tmp && PYTHONPATH=$P timeout 60 python3 -m lc0py backendbench -w $ROOT/$M -b cuda-fp16 --batch-sizes 1,16,64,256 --batches 150 --json > $O/bb_maia_${v}_$r.jsonl 2>>$O/bb.err)
  done
done; el backendbench
PYTHONPATH=$NEWP timeout 90 python3 -m lc0py verify -w /tmp/t82.pb.gz -b cuda-fp16 > $O/verify_t82.txt 2>&1; echo "verify t82 rc $?" >> $O/info.txt
cd $OUT && tar czf h.tgz h && rm -rf h
