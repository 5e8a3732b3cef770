#!/usr/bin/env bash
# stop 27, call 2: graph replay A/B of the SM-targeted GEMMs' tuning, one process per net.
set -u
export PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c LC0PY_TUNED_DIR=/tmp/t36
R=$PWD; export PYTHONPATH=$R/.whl/site:$R
O=$OUT/smsr; mkdir -p $O; cp .dev/call36.sh .dev/sms_replay.py $O/; START=$(date +%s); el() { echo $(( $(date +%s) - START )); }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm --format=csv,noheader; echo "tree $C"; } > $O/info.txt 2>&1
for n in t82 res-20x256; do [ -f /tmp/$n.pb.gz ] || python3 -m lc0py make-net --preset $n -o /tmp/$n.pb.gz > /dev/null 2>&1; done
timeout 200 python3 .dev/sms_replay.py /tmp/t82.pb.gz 24,32,48,64,96,128,256 8 > $O/t82.txt 2>&1; echo "t82 rc $? ($(el) s)" >> $O/info.txt
timeout 200 python3 .dev/sms_replay.py /tmp/res-20x256.pb.gz 16,32,64,128,256,512,1024 8 > $O/res.txt 2>&1; echo "res rc $? ($(el) s)" >> $O/info.txt
cat $O/info.txt $O/t82.txt $O/res.txt
