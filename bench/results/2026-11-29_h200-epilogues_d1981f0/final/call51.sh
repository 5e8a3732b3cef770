#!/usr/bin/env bash
# stop 29, call 4: T82 search on cuda-fp16 at minibatch 256 against backendbench (search_gpu_check); batch-1/8
# latency; the GPU suite parts 2 and 3 of 3 on the final tree
set -u
export PYTHONUNBUFFERED=1 LC0PY_CACHE_DIR=/tmp/c LC0PY_KERNEL_CACHE=/tmp/knew LC0PY_TUNED_DIR=/tmp/tunednew
O=$OUT/final; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C"; } > $O/info.txt 2>&1
cp .dev/call51.sh $O/
PYTHONPATH=$PWD/.whl/site:$PWD timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1
OUT=$O/search MB=256 GPU_CHECK_COMMIT=$C timeout 200 scripts/device/search_gpu_check > /dev/null 2>&1; el "search_gpu_check rc $?"
tail -12 $O/search/search_gpu_check.log >> $O/info.txt
PYTHONPATH=$PWD/.whl/site:$PWD timeout 60 python3 -m lc0py backendbench -w /tmp/t82.pb.gz -b cuda-fp16 --batch-sizes 1,8 --batches 500 > $O/latency.txt 2>&1
el "latency rc $?"; cat $O/latency.txt >> $O/info.txt
export PYTHONPATH=$PWD/.whl/site:$PWD
for p in 2 3; do
  timeout $(( 570 - ($(date +%s) - t) )) python3 scripts/device/gpu_suite.py --part $p --parts 3 --out $O > /dev/null 2>&1; el "suite part $p rc $?"
  tail -1 $O/gpu_suite_${p}of3.txt >> $O/info.txt
done
cat $O/info.txt
cd $OUT && tar czf final.tgz final
