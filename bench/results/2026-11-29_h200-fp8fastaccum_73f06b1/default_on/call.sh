#!/usr/bin/env bash
# stop 30, call 7 (one H200): fp8_fast_accum on by default (working tree): the FP8 GPU tests, the
# FP8 self-test, res-20x256 cuda-fp8 graph replay fast on/off, accuracy on maia-1900 on/off
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c LC0PY_TUNED_DIR=/tmp/tuned60
O=$OUT/b; mkdir -p $O; t=$(date +%s)
el() { echo "$* $(( $(date +%s) - t )) s" >> $O/info.txt; }
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C + fp8_fast_accum default on"; } > $O/info.txt 2>&1
cp .dev/call60.sh $O/call.sh
timeout 150 python3 -m pytest -p no:cacheprovider -q -rs tests/backends/gpu/test_fp8_gpu.py tests/backends/gpu/test_fp8_residual_gpu.py > $O/tests_fp8.txt 2>&1; echo "tests rc $?" >> $O/info.txt; el tests
timeout 90 python3 scripts/device/fp8_selftest.py --json $O/selftest.json > $O/selftest.txt 2>&1; echo "selftest rc $?" >> $O/info.txt; el selftest
timeout 40 python3 -m lc0py make-net --preset res-20x256 -o /tmp/res.pb.gz > /dev/null 2>&1; el make-net
timeout 80 python3 scripts/bench/graph_replay.py --weights /tmp/res.pb.gz --backend cuda-fp8 --variants "max_batch=1024,fp8_fast_accum=off;max_batch=1024" --sizes 256,1024 --rounds 4 --replays 30 > $O/replay_res_fp8.txt 2>>$O/err.txt; el replay-res
timeout 90 python3 scripts/device/fp8_accuracy.py --weights .nets/maia-1900.pb.gz --positions 1024 --ref 0 --emulate 0 --variant "fp8_fast_accum=off" --variant "" --md $O/accuracy_maia.md > $O/accuracy_maia.txt 2>>$O/err.txt; el accuracy
cd $OUT && tar czf b.tgz b && rm -rf b
