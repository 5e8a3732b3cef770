#!/usr/bin/env bash
# stop 28, call 3: LayerNorm / bias_act launch shapes alone at 1024 positions; flash persistent shapes swept in the pass
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c LC0PY_TUNED_DIR=/tmp/tuned41
O=$OUT/shapes; mkdir -p $O
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C"; } > $O/info.txt 2>&1
cp .dev/call43.sh .dev/lnprobe.py $O/
[ -f /tmp/t82.pb.gz ] || timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1
timeout 150 python3 .dev/lnprobe.py /tmp/t82.pb.gz > $O/ln.txt 2>&1; echo "ln rc $?" >> $O/info.txt
timeout 150 python3 .dev/lnprobe.py /tmp/t82.pb.gz 16384 > $O/ln_256.txt 2>&1; echo "ln256 rc $?" >> $O/info.txt
timeout 300 python3 scripts/bench/graph_replay.py --weights /tmp/t82.pb.gz --sizes 256,1024 --rounds 4 --replays 40 \
  --variants ";attn_stages=3,attn_min_blocks=2;attn_stages=4,attn_min_blocks=2;attn_min_blocks=3;attn_interleave=0;attn_descend=1" > $O/flash_sweep.txt 2>&1
echo "sweep rc $?" >> $O/info.txt
cat $O/info.txt $O/ln.txt $O/ln_256.txt $O/flash_sweep.txt | grep -v Warn
