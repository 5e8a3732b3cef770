#!/usr/bin/env bash
# call A: FP8 check, fusion A/B (short), host-path timelines; one H100
set -u
export PYTHONPATH=$PWD/.dev/site PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/lc0py-k LC0PY_CACHE_DIR=/tmp/lc0py-c
T0=$(date +%s)
mkdir -p $OUT/tl
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "tree $C"; } > $OUT/tl/info.txt
python3 -c "from lc0py.search.warmup import warm_up; print(warm_up())" > $OUT/tl/warm.txt 2>&1 &
WARM=$!
ROUNDS=2 BUDGET_S=120 timeout 250 scripts/device/fp8_check --out $OUT/fp8 > $OUT/fp8_stdout.txt 2>&1
echo "fp8 done +$(( $(date +%s) - T0 ))s" >> $OUT/tl/info.txt
wait $WARM
for n in maia-1900 meangirl-8; do
  timeout 40 python3 scripts/bench/search_timeline.py -w .dev/nets/$n.pb.gz -b cuda-fp16 --minibatch-size 0 > $OUT/tl/tl_$n.txt 2>&1
done
echo "timelines done +$(( $(date +%s) - T0 ))s" >> $OUT/tl/info.txt
ALL=ln_residual=on,smolgen_branch=on,row_halves=on
SKIP_TESTS=1 ROUNDS=2 BATCHES=40 FUSION_COMMIT=$C VARIANTS_OVERRIDE="off=;ln_residual=ln_residual=on;smolgen_branch=smolgen_branch=on;row_halves=row_halves=on;all=$ALL" \
  OUT=$OUT/fa timeout $(( 560 - ($(date +%s) - T0) )) scripts/device/gpu_fusion_ab > $OUT/fa_stdout.txt 2>&1
echo "fusion done +$(( $(date +%s) - T0 ))s" >> $OUT/tl/info.txt
cd $OUT && tar czf all.tgz --exclude=all.tgz * && find . -mindepth 1 -maxdepth 1 ! -name all.tgz -exec rm -rf {} +
