#!/usr/bin/env bash
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/r; mkdir -p $O
{ nvidia-smi --query-gpu=name,driver_version --format=csv; python3 -c "import cuda.bindings, importlib.metadata as m; print('cuda-bindings', m.version('cuda-bindings'))"; pip list 2>/dev/null | grep -i -E "cublas|nvrtc|cuda"; git log --oneline -1; } > $O/info.txt 2>&1
timeout 300 python3 scripts/bench/gemm_pdl_probe.py > $O/probe.txt 2>&1; echo "rc $?" >> $O/probe.txt
cat $O/info.txt $O/probe.txt
