#!/usr/bin/env bash
# Issue 11: the last call's main-vs-new ordering differed from the first H100 call's. This one
# separates the GPU from the host on one machine: kernel time per batch (torch.profiler, graphs off)
# for M (main before this session, .whl/oldtree), D (this tree, winograd_split=off), S (split,
# winograd_staged=off) and A (defaults), then backendbench rounds of M, M with the blocking wait
# (Mw: runner.wait_without_gil replaced by event.synchronize) and A.
#   C=<commit> bash docs/gpu_check/residual_final2/device_command.sh
set -u
R=$OUT/r; mkdir -p $R
mkdir -p /tmp/site && tar -xJf .whl/numba312.tar.xz -C /tmp/site
SITE=/tmp/site:$PWD/.whl/site
export NUMBA_CACHE_DIR=/tmp/nbcache PYTHONUNBUFFERED=1 PYTHONPATH=$SITE:$PWD LC0PY_KERNEL_CACHE=/tmp/kcN
L=$R/final2.log
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u; echo "tree ${C:-?}"; } >$L
f=/tmp/res-20x256.pb.gz
python3 -m lc0py make-net --preset res-20x256 -o $f >/dev/null 2>&1
for b in 256 1024; do for spec in "M -" "D winograd_split=off" "S winograd_staged=off" "A -"; do
  set -- $spec; o=""; [ "$2" != "-" ] && o="--backend-opts $2"; pp=$SITE:$PWD; kc=/tmp/kcN
  [ $1 = M ] && pp=$SITE:$PWD/.whl/oldtree && kc=/tmp/kcM
  echo "=== kernel profile $1 batch $b" >>$L
  PYTHONPATH=$pp LC0PY_KERNEL_CACHE=$kc timeout 100 python3 $PWD/scripts/gpu_kernel_profile.py --weights $f --batch $b $o --top 3 2>&1 | grep -v -i warn >>$L
done; done
bb() {  # side opts
  local side=$1 opts=$2 pp=$SITE:$PWD kc=/tmp/kcN pre=""
  [ ${side:0:1} = M ] && pp=$SITE:$PWD/.whl/oldtree && kc=/tmp/kcM
  [ $side = Mw ] && pre="import lc0py.backends.gpu.runner as r; r.wait_without_gil = lambda e: e.synchronize(); "
  PYTHONPATH=$pp LC0PY_KERNEL_CACHE=$kc timeout 150 python3 -c "${pre}import sys; from lc0py.cli.main import main; sys.exit(main(sys.argv[1:]))" \
    backendbench -w $f -b cuda-fp16 -o $opts --batch-sizes 64,256,1024 --batches 30 --json 2>>$R/bb.err \
    | sed "s|^{|{\"side\": \"$side\", \"tag\": \"res\", |" >>$R/ab.jsonl
}
for r in 1 2 3; do bb M max_batch=1024; bb Mw max_batch=1024; bb A max_batch=1024; done
python3 docs/gpu_check/residual_h100/summary.py $R/ab.jsonl >>$L
date -u >>$L
