#!/usr/bin/env bash
# stop 29, call 5: where cuda-fp8's pass goes (CUPTI per kernel at 256 and 1024, every kernel) against cuda-fp16
set -u
export PYTHONUNBUFFERED=1 LC0PY_CACHE_DIR=/tmp/c LC0PY_KERNEL_CACHE=/tmp/knew LC0PY_TUNED_DIR=/tmp/tunednew PYTHONPATH=$PWD/.whl/site:$PWD
O=$OUT/fp8profile; mkdir -p $O; t=$(date +%s)
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C"; } > $O/info.txt 2>&1
cp .dev/call52.sh .dev/kprobe5.py $O/
timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1
for b in cuda-fp8 cuda-fp16; do for n in 256 1024; do
  timeout 120 python3 .dev/kprobe5.py /tmp/t82.pb.gz $n "" 40 $b 2>&1 | grep -v -i warn > $O/cupti_${b}_$n.txt
done; done
echo "done $(( $(date +%s) - t )) s" >> $O/info.txt
grep -H "==" $O/cupti_*.txt >> $O/info.txt
cat $O/info.txt
cd $OUT && tar czf fp8profile.tgz fp8profile
