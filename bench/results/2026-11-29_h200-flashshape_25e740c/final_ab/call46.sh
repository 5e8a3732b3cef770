#!/usr/bin/env bash
# stop 28, call 6 (final A/B): peer_rounds new / old (HEAD~1) / PyTorch peer at 64/256/1024, 2 rounds;
# Nsight Compute on the new flash kernel at 1024; the persistent shape's occupancy on the new kernel
set -u
export PYTHONPATH=$PWD/.whl/site PYTHONUNBUFFERED=1 LC0PY_CACHE_DIR=/tmp/c
O=$OUT/final; mkdir -p $O; t=$(date +%s)
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "new $C, old $(cat .dev/base/REV)"; } > $O/info.txt 2>&1
cp .dev/call46.sh $O/
PYTHONPATH=$PWD/.whl/site:$PWD timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1
OUT=$O/peer NET=/tmp/t82.pb.gz SIZES=64,256,1024 ROUNDS=2 OLD=.dev/base C=$C timeout 330 scripts/device/peer_rounds > /dev/null 2>&1
echo "peer_rounds rc $? $(( $(date +%s) - t )) s" >> $O/info.txt; tail -8 $O/peer/rounds.log >> $O/info.txt
OUT=$O/ncu PRESET=t82 NET=/tmp/t82.pb.gz BATCHES=1024 KERNEL=flash_attention_persistent_f16 NCU_BATCH=1024 SKIP=30 C=$C \
  SECTIONS="SpeedOfLight MemoryWorkloadAnalysis Occupancy WarpStateStats SchedulerStats LaunchStats InstructionStats SourceCounters" \
  PYTHONPATH=$PWD/.whl/site:$PWD timeout 120 scripts/device/kernel_profile > /dev/null 2>&1
echo "ncu rc $? $(( $(date +%s) - t )) s" >> $O/info.txt; rm -f $O/ncu/kernel.ncu-rep
grep -E "^ +(Duration|Memory Throughput|Issue Slots Busy|Executed Instructions |Eligible Warps|Registers Per|Achieved Occ)" $O/ncu/profile.log | sort -u >> $O/info.txt
PYTHONPATH=$PWD/.whl/site:$PWD LC0PY_KERNEL_CACHE=/tmp/kn timeout 120 python3 scripts/bench/graph_replay.py --weights /tmp/t82.pb.gz \
  --sizes 256,1024 --rounds 3 --replays 30 --variants ";attn_min_blocks=3;attn_stages=3,attn_min_blocks=3" > $O/occupancy.txt 2>&1
echo "occupancy rc $? $(( $(date +%s) - t )) s" >> $O/info.txt; cat $O/occupancy.txt >> $O/info.txt
cd $OUT && tar czf final.tgz final && cat final/info.txt
