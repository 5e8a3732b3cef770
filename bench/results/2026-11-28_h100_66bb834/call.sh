#!/usr/bin/env bash
# issue 28: 100-game fixed-node match cuda-fp8 (calibrated) vs cuda-fp16 on maia-1900; the
# restored calibration's GPU tests; host memory check after the NVRTC fix (cold kernel cache)
set -u
export PYTHONPATH=$PWD/.dev/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/f; mkdir -p $O; t=$(date +%s)
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "tree $C"; } > $O/info.txt
timeout 90 python3 scripts/device/host_memory_check.py > $O/hostmem.txt 2>&1
echo "hostmem rc $? $(( $(date +%s) - t )) s" >> $O/info.txt
python3 -c "from lc0py.search.warmup import warm_up; print(f'core {warm_up():.1f} s')" > $O/warm.txt 2>&1
M=.dev/nets/maia-1900.pb.gz
timeout 120 python3 -m lc0py calibrate $M --json > $O/calibrate.json 2> $O/calibrate.err
echo "calibrate rc $? $(( $(date +%s) - t )) s" >> $O/info.txt
timeout 200 python3 scripts/compare/match_engines.py --weights $M --a cuda-fp8 --b cuda-fp16 --games 100 --nodes 400 --parallel 6 --pgn $O/match.pgn > $O/match.txt 2> $O/match.err
echo "match rc $? $(( $(date +%s) - t )) s" >> $O/info.txt
ln -sfn $PWD/.dev/nets .nets
timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider tests/backends/gpu/test_fp8_calibration.py tests/backends/gpu/test_fp8_residual_gpu.py > $O/gpu_tests.log 2>&1
echo "gpu tests rc $? at $(date -u) $(( $(date +%s) - t )) s" >> $O/info.txt; tail -3 $O/gpu_tests.log >> $O/info.txt
cd $OUT && tar czf f.tgz f && rm -rf f
