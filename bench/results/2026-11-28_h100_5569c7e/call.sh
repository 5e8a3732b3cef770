#!/usr/bin/env bash
# call 5: GPU tests of the merged tree + the calibration-file diagnosis; one H100
set -u
export PYTHONPATH=$PWD/.dev/site:$PWD PYTHONUNBUFFERED=1
ln -sfn $PWD/.dev/nets .nets
O=$OUT/g; mkdir -p $O
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "tree $C"; } > $O/info.txt
timeout 60 python3 .dev/npzdiag.py > $O/npzdiag.txt 2>&1
timeout 100 python3 -m lc0py verify -w .nets/maia-1900.pb.gz --backend cuda-fp8 -o winograd=on --batch 8 --seed 7 > $O/verify_wino.txt 2>&1; echo "verify wino rc $?" >> $O/info.txt
timeout 330 python3 -m pytest -m gpu -q -p no:cacheprovider tests/backends/gpu tests/api/test_net_gpu.py > $O/gpu_tests.log 2>&1
echo "gpu tests rc $? at $(date -u)" >> $O/info.txt; tail -3 $O/gpu_tests.log >> $O/info.txt
cd $OUT && tar czf g.tgz g && rm -rf g
