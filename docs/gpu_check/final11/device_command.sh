#!/usr/bin/env bash
# Eleventh stop: the whole scripts/device/gpu_check on the final tree (SE_BRANCH_SMS, masks up in pieces), one H100 call; its output folder
# comes back as one tar (the device tool returns at most 8 files), unpacked here into gpu_check/.
#   C=<commit> bash docs/gpu_check/final11/device_command.sh
set -u
mkdir -p /tmp/site && tar -xJf .whl/numba312.tar.xz -C /tmp/site
export PYTHONPATH=/tmp/site:$PWD/.whl/site NUMBA_CACHE_DIR=/tmp/nbcache
GPU_CHECK_COMMIT=${C:-?} OUT=/tmp/gpu_check timeout 585 scripts/device/gpu_check
rc=$?
echo "gpu_check rc $rc" >>/tmp/gpu_check/gpu_check.log
tar -C /tmp -czf $OUT/gpu_check.tgz gpu_check
grep -E "^(===|---)|PASS|FAIL|passed|failed|rc " /tmp/gpu_check/gpu_check.log | tail -60
