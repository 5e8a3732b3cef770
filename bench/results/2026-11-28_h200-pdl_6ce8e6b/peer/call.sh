#!/usr/bin/env bash
# stop 21, call 5: T82 backendbench at 64/256/1024, pdl on and off in alternating rounds, and the
# PyTorch peer (compile + CUDA graph + SDPA) in the same call
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/q; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C"; nproc; } > $O/info.txt 2>&1
cp .dev/call46.sh $O/call.sh
timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1; el make-net
for r in 1 2 3; do
  if [ $((r % 2)) = 1 ]; then order="off on"; else order="on off"; fi
  for v in $order; do
    timeout 90 python3 -m lc0py backendbench -w /tmp/t82.pb.gz -b cuda-fp16 -o pdl=$v,max_batch=1024 --batch-sizes 1,64,256,1024 --batches 50 --json > $O/bb_t82_${v}_$r.jsonl 2>>$O/bb.err
  done
  el round $r
  if [ $r = 1 ]; then
    timeout 300 python3 scripts/compare/peer_torch.py --weights /tmp/t82.pb.gz --sizes 64,256,1024 > $O/peer_torch.jsonl 2>>$O/peer.err; echo "peer rc $?" >> $O/info.txt; el peer
  fi
done
cd $OUT && tar czf q.tgz q && rm -rf q
