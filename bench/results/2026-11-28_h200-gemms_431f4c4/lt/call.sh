#!/usr/bin/env bash
# stop 17, call 5: cuBLASLt's algorithms for T82's fp16 GEMM shapes at batch 1/16/32, each timed (the
# TunableOp probe of call 3 offered torch's default only on CUDA)
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1
O=$OUT/l; mkdir -p $O
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C"; } > $O/info.txt 2>&1
timeout 240 python3 .dev/lt_sweep.py $O/sweep.json > $O/sweep.txt 2>&1; echo "rc $?" >> $O/info.txt
cd $OUT && tar czf l.tgz l && rm -rf l
