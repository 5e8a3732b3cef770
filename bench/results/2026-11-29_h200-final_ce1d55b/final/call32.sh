#!/usr/bin/env bash
# stop 26, call 4: the GPU test suite and verify on the final tree (gemm_tune on), then the FP8 algorithm sweep
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c LC0PY_TUNED_DIR=/tmp/tuned32
O=$OUT/final; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C"; } > $O/info.txt 2>&1
cp .dev/call32.sh .dev/fp8_sweep.py $O/
[ -f /tmp/t82.pb.gz ] || timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1
for w in /tmp/t82.pb.gz .nets/maia-1900.pb.gz .nets/meangirl-8.pb.gz; do for p in cuda-fp16 cuda; do
  timeout 60 python3 -m lc0py verify -w $w -b $p > $O/verify_$(basename $w .pb.gz)_$p.txt 2>&1; echo "verify $(basename $w) $p rc $? $(grep -o 'PASS\|FAIL' $O/verify_$(basename $w .pb.gz)_$p.txt | sort | uniq -c | tr '\n' ' ') $(grep -o 'worst relative error [0-9.e+-]*' $O/verify_$(basename $w .pb.gz)_$p.txt)" >> $O/info.txt
done; done; el verify
LC0PY_TEST_NETS=$PWD/.nets timeout 450 python3 -m pytest -m gpu -q -p no:cacheprovider tests/ > $O/gpu_tests.log 2>&1
echo "gpu tests rc $?" >> $O/info.txt; tail -1 $O/gpu_tests.log >> $O/info.txt; el tests
R=$(( 570 - $(date +%s) + t )); [ $R -gt 30 ] && timeout $R python3 .dev/fp8_sweep.py $O/fp8_sweep.json > $O/fp8_sweep.txt 2>&1; el fp8sweep
cat $O/info.txt; grep -E "FAIL|Error" $O/gpu_tests.log | head -20; cat $O/fp8_sweep.txt | tail -12
