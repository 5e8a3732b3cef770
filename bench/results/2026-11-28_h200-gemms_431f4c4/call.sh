#!/usr/bin/env bash
# stop 17, call 3 (de-risk): T82's GEMM shapes at batch 1/16/32/64, each timed in torch: cuBLASLt's
# default algorithm vs the one TunableOp picks by timing
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c
O=$OUT/t; mkdir -p $O; t=$(date +%s)
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C"; python3 -c "import torch; print(torch.__version__, torch.version.cuda)"; } > $O/info.txt 2>&1
timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1
timeout 150 python3 .dev/gemm_tune_probe.py /tmp/t82.pb.gz 1,16,32,64 $O/default.json > $O/default.txt 2>&1
echo "default rc $? $(( $(date +%s) - t )) s" >> $O/info.txt
PYTORCH_TUNABLEOP_ENABLED=1 PYTORCH_TUNABLEOP_TUNING=1 PYTORCH_TUNABLEOP_FILENAME=$O/tunableop.csv PYTORCH_TUNABLEOP_VERBOSE=0 timeout 300 python3 .dev/gemm_tune_probe.py /tmp/t82.pb.gz 1,16,32,64 $O/tuned.json > $O/tuned.txt 2>&1
echo "tuned rc $? $(( $(date +%s) - t )) s" >> $O/info.txt
cd $OUT && tar czf t.tgz t && rm -rf t
