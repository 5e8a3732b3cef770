#!/usr/bin/env bash
# call 8 (last, short): feeder on/off on maia-1900 cuda-fp16; lc0py vs lc0 benchmark maia-1900, one round
set -u
export PYTHONPATH=$PWD/.dev/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/f; mkdir -p $O
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "tree $C"; } > $O/info.txt
t=$(date +%s); python3 -c "from lc0py.search.warmup import warm_up; print(f'core {warm_up():.1f} s')" > $O/warm.txt 2>&1; echo "warm $(( $(date +%s) - t )) s" >> $O/info.txt
timeout 25 python3 -m lc0py benchmark -w .dev/nets/maia-1900.pb.gz -b cuda-fp16 --nodes 20000 --num-positions 6 > $O/lc0py_maia.txt 2>&1
timeout 25 .dev/lc0-cuda/lc0-on-device benchmark --weights=.dev/nets/maia-1900.pb.gz --backend=cuda-fp16 --nodes=20000 --num-positions=6 > $O/lc0_maia.txt 2>&1
echo "bench done $(( $(date +%s) - t )) s" >> $O/info.txt
(cd $OUT && tar czf f1.tgz f)
timeout 70 python3 scripts/bench/feeder_ab.py --out $O/feeder -w .dev/nets/maia-1900.pb.gz -b cuda-fp16 --rounds 2 > $O/feeder_ab.txt 2>&1
echo "rc $? at $(date -u), $(( $(date +%s) - t )) s" >> $O/info.txt
cd $OUT && tar czf f.tgz f && rm -rf f f1.tgz
