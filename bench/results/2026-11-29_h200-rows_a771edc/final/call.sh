#!/usr/bin/env bash
# the GPU test suite and verify on the tree with the row kernels weights-first (a771edc)
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/g; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C"; } > $O/info.txt 2>&1
cp .dev/call26.sh $O/call.sh
[ -f /tmp/t82.pb.gz ] || timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1
for w in /tmp/t82.pb.gz .nets/maia-1900.pb.gz .nets/meangirl-8.pb.gz; do for p in cuda-fp16 cuda; do
  timeout 60 python3 -m lc0py verify -w $w -b $p > $O/verify_$(basename $w .pb.gz)_$p.txt 2>&1; echo "verify $(basename $w) $p rc $? $(grep -o 'PASS\|FAIL' $O/verify_$(basename $w .pb.gz)_$p.txt | sort | uniq -c | tr '\n' ' ')" >> $O/info.txt
done; done; el verify
LC0PY_TEST_NETS=$PWD/.nets timeout 470 python3 -m pytest -m gpu -q -p no:cacheprovider tests/ > $O/gpu_tests.log 2>&1
echo "gpu tests rc $?" >> $O/info.txt; tail -1 $O/gpu_tests.log >> $O/info.txt; el tests
cat $O/info.txt; grep -E "FAIL|Error" $O/gpu_tests.log | head -20
cd $OUT && tar czf g.tgz g && rm -rf g
