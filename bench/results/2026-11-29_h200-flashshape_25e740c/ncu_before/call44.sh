#!/usr/bin/env bash
# stop 28, call 4: Nsight Compute on T82's flash kernel at 1024 and 256 positions
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c LC0PY_TUNED_DIR=/tmp/tuned41
O=$OUT/ncu; mkdir -p $O
cp .dev/call44.sh $O/
[ -f /tmp/t82.pb.gz ] || timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1
which ncu > $O/info.txt 2>&1
for b in 1024 256; do
OUT=$O/b$b PRESET=t82 NET=/tmp/t82.pb.gz BATCHES=$b KERNEL=flash_attention_persistent_f16 NCU_BATCH=$b SKIP=30 C=$C \
  SECTIONS="SpeedOfLight MemoryWorkloadAnalysis Occupancy WarpStateStats SchedulerStats LaunchStats InstructionStats ComputeWorkloadAnalysis SourceCounters" \
  timeout 280 scripts/device/kernel_profile >> $O/info.txt 2>&1
echo "b$b rc $?" >> $O/info.txt
rm -f $O/b$b/kernel.ncu-rep
done
cd $O && tar czf ncu.tgz b1024 b256 && rm -rf b1024/kernel_sass.csv.gz b256/kernel_sass.csv.gz
cat $O/info.txt; grep -E "Duration|Throughput|Issue Slots|Warp Cycles|Eligible|Issued Warp|Achieved Occupancy|No Eligible|Registers|Executed Ipc|Stall|L1/TEX Hit|L2 Hit|Mem Busy|Max Bandwidth|DRAM" $O/b1024/profile.log | head -60
