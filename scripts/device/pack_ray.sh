#!/usr/bin/env bash
# scripts/device/pack_ray.sh -- Ray for the device's Python 3.12, small enough to carry.
#
#   bash scripts/device/pack_ray.sh            -> .whl/ray312.tar.xz (~30 MB), read by scripts/device/scaling
#
# Ray's wheel (~79 MB) is over the 64 MiB a device call carries. This downloads the wheels of the
# Ray installed here (and its dependencies, but protobuf, which the device has) for CPython 3.12
# on manylinux x86_64 through pip, unpacks them, leaves out what a local cluster running
# `bulk-eval --ray` never loads (Java jars, the dashboard's web build, RLlib, Tune, Serve, Train,
# LLM), and packs the rest with xz. PRUNE_ONLY=DIR prunes an unpacked site folder DIR in place
# (how the pruning is checked on this machine's Python: see docs/scaling-out.md).
set -eu
prune() {
  local site=$1
  rm -rf "$site/ray/jars" "$site/ray/dashboard/client/build" "$site/ray/rllib" "$site/ray/tune" \
    "$site/ray/serve" "$site/ray/train" "$site/ray/llm"
  find "$site" -name "__pycache__" -type d -prune -exec rm -rf {} +
}
if [ -n "${PRUNE_ONLY:-}" ]; then prune "$PRUNE_ONLY"; exit 0; fi
PIP=${PIP:-pip}
VERSION=${RAY_VERSION:-$(python3 -c "import ray; print(ray.__version__)")}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
"$PIP" download "ray==$VERSION" --python-version 3.12 --only-binary=:all: --platform manylinux2014_x86_64 \
  -d "$WORK/dl" >/dev/null
mkdir -p "$WORK/site" .whl
for w in "$WORK"/dl/*.whl; do
  case $(basename "$w") in protobuf-*) continue ;; esac
  python3 -m zipfile -e "$w" "$WORK/site/"
done
prune "$WORK/site"
chmod +x "$WORK/site/ray/core/src/ray/raylet/raylet" "$WORK/site/ray/core/src/ray/gcs/gcs_server" 2>/dev/null || true
XZ_OPT=-9 tar -cJf .whl/ray312.tar.xz -C "$WORK/site" .
ls -la .whl/ray312.tar.xz
