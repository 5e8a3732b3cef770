#!/usr/bin/env bash
# Issue 11, tenth stop: the steps after the source counters (transforms with shared terms, unrolled copies, immediate offsets, gates loaded early)
# on top of the tile-major layout. The GPU residual tests and verify of this tree; like-for-like e2e
# (residual_h100b/e2e.py) of res-20x256 for main before this stop (M: .whl/main80 = `git archive
# 80d09cd lc0py kernels`) and this tree (N), M N N M, 2 rounds, the PyTorch peer after each round;
# then Nsight Compute in context (--cache-control none) of the GEMMs and steps at 1024, M and N.
#   C=<commit> bash docs/gpu_check/residual_steps/device_command.sh
set -u
R=$OUT/r; mkdir -p $R; D=docs/gpu_check
mkdir -p /tmp/site && tar -xJf .whl/numba312.tar.xz -C /tmp/site
SITE=/tmp/site:$PWD/.whl/site
export NUMBA_CACHE_DIR=/tmp/nbcache PYTHONUNBUFFERED=1
L=$R/run.log
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u; echo "tree ${C:-?}; M = 80d09cd"; } >$L
f=/tmp/res-20x256.pb.gz
PYTHONPATH=$SITE:$PWD python3 -m lc0py make-net --preset res-20x256 -o $f >/dev/null 2>&1
run() {  # side net script args...
  local side=$1 net=$2; shift 2; local pp=$SITE:$PWD kc=/tmp/kcN
  [ $side = M ] && pp=$SITE:$PWD/.whl/main80 && kc=/tmp/kcM
  PYTHONPATH=$pp LC0PY_KERNEL_CACHE=$kc timeout 120 python3 "$@" 2>>$R/err | sed "s|^{|{\"side\": \"$side\", \"net\": \"$net\", |" >>$L
}
peer() { PYTHONPATH=$SITE:$PWD timeout 200 python3 scripts/compare/peer_torch.py --weights $2 --sizes $3 2>>$R/peer.err | sed "s|^{|{\"side\": \"peer\", \"net\": \"$1\", |" >>$L; }
echo "=== pytest (GPU residual tests, this tree)" >>$L
PYTHONPATH=$SITE:$PWD LC0PY_KERNEL_CACHE=/tmp/kcN timeout 240 python3 -m pytest -q -p no:cacheprovider tests/backends/gpu/test_gpu_residual.py 2>&1 | tail -4 >>$L
echo "=== verify" >>$L
for n in $f .nets/maia-1100.pb.gz .nets/meangirl-8.pb.gz; do
  for b in cuda-fp16 cuda; do
    PYTHONPATH=$SITE:$PWD LC0PY_KERNEL_CACHE=/tmp/kcN timeout 120 python3 -m lc0py verify --weights $n --backend $b --batch 8 --seed 7 2>&1 | tail -2 >>$L
  done
  PYTHONPATH=$SITE:$PWD LC0PY_KERNEL_CACHE=/tmp/kcN timeout 120 python3 -m lc0py verify --weights $n --backend cuda-fp16 -o winograd=on,se_gates=on --batch 8 --seed 7 2>&1 | tail -2 >>$L
done
for r in 1 2; do
  for side in M N N M; do run $side res $D/residual_h100b/e2e.py $f 64,256,1024; done
  peer res $f 64,256,1024
done
python3 - $L >>$L <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
def med(net, side, b):
    v = [r["nps"] for r in rows if r["net"] == net and r["side"] == side and r.get("batch") == b]
    return statistics.median(v) if v else float("nan")
for b in (64, 256, 1024):
    m, n, p = med("res", "M", b), med("res", "N", b), med("res", "peer", b)
    print("res e2e", b, {"M": round(m), "N": round(n), "peer": round(p)}, "N/M", round(n / m, 3),
          "N/peer", round(n / p, 3), "M/peer", round(m / p, 3))
PY
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__inst_executed.sum
for side in M N; do
  pp=$SITE:$PWD; [ $side = M ] && pp=$SITE:$PWD/.whl/main80
  PYTHONPATH=$pp LC0PY_KERNEL_CACHE=/tmp/kc$side timeout 200 ncu --clock-control none --cache-control none \
    --kernel-name regex:"winograd_output_fused|nvjet|se_gates" --launch-skip 400 --launch-count 12 --metrics $M --csv \
    python3 $D/residual_gap/ncu_ctx.py $f 1024 >$R/ncu_$side.csv 2>>$R/err
done
date -u >>$L
for l in 171 172; do
  PYTHONPATH=$SITE:$PWD LC0PY_KERNEL_CACHE=/tmp/kcN timeout 200 ncu --clock-control none --cache-control none --kernel-name regex:winograd_output_fused_split_staged \
    --launch-skip $l --launch-count 1 --section SourceCounters --section WarpStateStats --section SpeedOfLight -o /tmp/s$l \
    python3 $D/residual_gap/ncu_ctx.py $f 1024 >/dev/null 2>>$R/err
  echo "=== source counters, launch $l" >>$L
  ncu -i /tmp/s$l.ncu-rep --page details --section WarpStateStats --section SpeedOfLight 2>&1 | grep -E "Duration|Warp Cycles Per Issued|Memory Throughput" >>$L
  ncu -i /tmp/s$l.ncu-rep --page source --csv --print-source sass 2>>$R/err | gzip >$R/sass_$l.csv.gz
done
date -u >>$L
