#!/usr/bin/env bash
# Ninth stop: the whole scripts/device/gpu_check on the final tree (54e324f), one H100 call (455 s, rc 0:
# every step passed; the script exits 1 if any fails).
#   mkdir -p /tmp/site && tar -xJf .whl/numba312.tar.xz -C /tmp/site
#   export PYTHONPATH=/tmp/site:$PWD/.whl/site NUMBA_CACHE_DIR=/tmp/nbcache
#   GPU_CHECK_COMMIT=54e324f OUT=$OUT/gpu_check timeout 585 scripts/device/gpu_check
# The device tool returns at most 8 files: gpu_check.log, peer_torch.jsonl, peer_torch_res.jsonl
# and performance_gpu.md did not come back. output_tail.txt is the call's printed tail (the log's
# step headers and every verify line). Next time: tar the folder into one file.
# The 14 residual verify lines of output_tail.txt, in the script's order: res-20x256 fp16 / fp32
# 5.1e-3 / 4.1e-6; t78 fp16 / fp32 1.8e-3 / 1.6e-6; res-20x256 winograd=off 1.7e-3 / 8.0e-7;
# res-20x256 se_gates=on 5.2e-3 / 3.8e-6; maia-1100 fp16 / fp32 8.5e-4 / 2.1e-7, fp16 with
# winograd=on,se_gates=on 3.5e-3; meangirl-8 fp16 / fp32 2.7e-3 / 6.4e-7, fp16 with
# winograd=on,se_gates=on 8.0e-3. The GPU tests (pytest -m gpu) passed: the step reports no
# failure (the project's -q addopts with gpu_check's -q print no summary line).
