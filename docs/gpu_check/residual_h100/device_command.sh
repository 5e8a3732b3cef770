#!/usr/bin/env bash
# Issue 11's residual targets on the H100, first call: correctness of this tree's fused steps,
# Nsight Compute of the split and staged-split kernels, and the same-run A/B for res-20x256:
#   M = main before this session (.whl/oldtree = `git archive 1656afb lc0py kernels scripts`),
#   D = this tree, winograd_split=off (the one-thread-per-channel kernel),
#   S = this tree, defaults (the split kernel), G = this tree, winograd_staged=on,
# with the PyTorch peer in the same call. Carry .whl (numba312.tar.xz, site/, oldtree/) and .nets.
#   C=<commit> bash docs/gpu_check/residual_h100/device_command.sh
set -u
R=$OUT/r; mkdir -p $R
( while sleep 20; do tar -czf $OUT/partial.tgz -C $OUT r 2>/dev/null; done ) &
mkdir -p /tmp/site && tar -xJf .whl/numba312.tar.xz -C /tmp/site
SITE=/tmp/site:$PWD/.whl/site
export NUMBA_CACHE_DIR=/tmp/nbcache PYTHONUNBUFFERED=1 PYTHONPATH=$SITE:$PWD LC0PY_KERNEL_CACHE=/tmp/kcN
L=$R/h100.log
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u; echo "tree ${C:-?}"; } >$L
f=/tmp/res-20x256.pb.gz
python3 -m lc0py make-net --preset res-20x256 -o $f >/dev/null 2>&1
echo "=== GPU residual + runner tests" >>$L
timeout 240 python3 -m pytest -q -m gpu -p no:cacheprovider tests/backends/gpu/test_gpu_residual.py tests/backends/gpu/test_runner.py 2>&1 | tail -3 >>$L
echo "=== verify" >>$L
for spec in "$f cuda-fp16 -" "$f cuda -" "$f cuda-fp16 winograd_staged=on" "$f cuda winograd_staged=on" "$f cuda-fp16 winograd_split=off" \
            ".nets/maia-1100.pb.gz cuda-fp16 -" ".nets/maia-1100.pb.gz cuda-fp16 winograd=on,winograd_staged=on" ".nets/maia-1100.pb.gz cuda winograd=on" \
            ".nets/meangirl-8.pb.gz cuda-fp16 winograd=on,winograd_staged=on" ".nets/meangirl-8.pb.gz cuda winograd=on"; do
  set -- $spec; o=""; [ "$3" != "-" ] && o="-o $3"
  timeout 90 python3 -m lc0py verify -w $1 --backend $2 $o --batch 8 --seed 29 2>&1 | grep -E "PASS|FAIL|rror" | sed "s|^|$(basename $1) $2 $3: |" >>$L
done
for spec in "winograd_output_fused_split 85 -" "winograd_output_fused_split_staged 85 winograd_staged=on" "winograd_output_fused_split_staged 84 winograd_staged=on"; do
  set -- $spec; o=max_batch=1024,graphs=off; [ "$3" != "-" ] && o=$o,$3
  echo "=== ncu $1 launch $2" >>$L
  timeout 100 ncu --clock-control none --kernel-name $1 --launch-skip $2 --launch-count 1 \
    --section SpeedOfLight --section InstructionStats --section SchedulerStats --section Occupancy --section LaunchStats \
    python3 -m lc0py backendbench -w $f -b cuda-fp16 -o $o --batch-sizes 1024 --batches 4 2>&1 \
    | grep -E "Duration|Executed Instructions  |Issued Warp|Eligible Warps|Registers Per|Achieved Active|Compute \(SM\)|Memory Throughput|Grid Size|Dynamic Shared" >>$L
done
bb() {  # side net opts sizes batches tag
  local side=$1 net=$2 opts=$3 sizes=$4 n=$5 tag=$6 pp=$SITE:$PWD kc=/tmp/kcN
  [ $side = M ] && pp=$SITE:$PWD/.whl/oldtree && kc=/tmp/kcM
  PYTHONPATH=$pp LC0PY_KERNEL_CACHE=$kc timeout 150 python3 -m lc0py backendbench -w $net -b cuda-fp16 -o $opts --batch-sizes $sizes --batches $n --json 2>>$R/bb.err \
    | sed "s|^{|{\"side\": \"$side\", \"tag\": \"$tag\", |" >>$R/ab.jsonl
}
for r in 1 2 3; do
  bb M $f max_batch=1024 64,256,1024 30 res
  bb D $f max_batch=1024,winograd_split=off 64,256,1024 30 res
  bb S $f max_batch=1024 64,256,1024 30 res
  bb G $f max_batch=1024,winograd_staged=on 64,256,1024 30 res
done
echo "=== peer" >>$L
timeout 120 python3 scripts/compare/peer_torch.py --weights $f --sizes 64,256,1024 >$R/peer_res.jsonl 2>>$R/peer.err; cat $R/peer_res.jsonl >>$L
python3 docs/gpu_check/residual_h100/summary.py $R/ab.jsonl $R/peer_res.jsonl >>$L
date -u >>$L
kill %1 2>/dev/null; rm -f $OUT/partial.tgz
