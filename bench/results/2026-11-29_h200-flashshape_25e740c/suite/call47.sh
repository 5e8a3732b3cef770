#!/usr/bin/env bash
# stop 28, call 7: verify on the real nets and T82, then the GPU test suite, on the final tree
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c LC0PY_TUNED_DIR=/tmp/tuned47
O=$OUT/final; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C"; } > $O/info.txt 2>&1
cp .dev/call47.sh $O/
[ -f /tmp/t82.pb.gz ] || timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1
for w in /tmp/t82.pb.gz .nets/maia-1900.pb.gz .nets/meangirl-8.pb.gz; do
  timeout 60 python3 -m lc0py verify -w $w -b cuda-fp16 > $O/verify_$(basename $w .pb.gz).txt 2>&1; echo "verify $(basename $w) cuda-fp16 rc $? $(grep -o 'PASS\|FAIL' $O/verify_$(basename $w .pb.gz).txt | sort | uniq -c | tr '\n' ' ') $(grep -o 'worst relative error [0-9.e+-]*' $O/verify_$(basename $w .pb.gz).txt)" >> $O/info.txt
done
timeout 60 python3 -m lc0py verify -w /tmp/t82.pb.gz -b cuda-fp8 > $O/verify_t82_fp8.txt 2>&1; echo "verify t82 cuda-fp8 rc $? $(grep -o "worst relative error [0-9.e+-]*" $O/verify_t82_fp8.txt)" >> $O/info.txt; el verify
ls -la /tmp/tuned47 >> $O/info.txt 2>&1
LC0PY_TEST_NETS=$PWD/.nets timeout 480 python3 -m pytest -m gpu -q -p no:cacheprovider tests/ > $O/gpu_tests.log 2>&1
echo "gpu tests rc $?" >> $O/info.txt; tail -1 $O/gpu_tests.log >> $O/info.txt; el tests
cat $O/info.txt; grep -E "FAIL|Error" $O/gpu_tests.log | head -20
cd $OUT && tar czf final.tgz final
