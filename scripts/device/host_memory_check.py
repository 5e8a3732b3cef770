#!/usr/bin/env python3
"""Does a GPU network's life cycle write into host memory it does not own? One device command:

    PYTHONPATH=$PWD python3 scripts/device/host_memory_check.py

Before any GPU work it keeps the ``.npz`` bytes of a small archive (numpy's header text comes from
cached Python objects) and ~20,000 sentinel byte strings of many sizes (so the allocator hands
their memory out across its size classes); after every step (platform, build, traced run, graph
run, close; residual fp16 and FP8, transformer fp16) it checks both and prints the first step at
which anything changed. On an undamaged process every line says ``ok``. (Found 2026-11-28: a
calibration archive's header held NUL bytes after residual FP8 runs: bench/results.)
"""

from __future__ import annotations

import io
import sys
import zlib

import numpy as np


def archive() -> bytes:
    buf = io.BytesIO()
    np.savez(buf, version=np.array(1), digest=np.array("abc" * 8), scale=np.arange(7, dtype=np.float32))
    return buf.getvalue()


def main() -> int:
    rng = np.random.default_rng(5)
    sizes = rng.integers(1, 4096, 20_000)
    sentinels = [bytes(rng.integers(1, 255, int(k), dtype=np.uint8)) for k in sizes]
    sums = [zlib.crc32(s) for s in sentinels]
    reference = archive()
    bad = 0
    shown: list[str] = []

    def check(step: str) -> None:
        nonlocal bad
        changed = [i for i, s in enumerate(sentinels) if zlib.crc32(s) != sums[i]]
        now = archive()
        ok = not changed and now == reference
        if not ok:
            bad += 1
        same = "same" if now == reference else "differs"
        detail = "" if ok else f" DAMAGED: {len(changed)} sentinels, archive {same}"
        if now != reference and not shown:
            shown.append(step)
            at = [i for i in range(min(len(now), len(reference))) if now[i] != reference[i]]
            first = at[0] if at else min(len(now), len(reference))
            lo, hi = max(0, first - 24), first + 40
            detail += (f" (lengths {len(reference)}/{len(now)}, {len(at)} bytes differ from offset {first}:"
                       f" before {reference[lo:hi]!r} after {now[lo:hi]!r})")
        print(f"{step}: {'ok' if ok else ''}{detail}", flush=True)

    from lc0py.backends.gpu.network import GpuNetwork
    from lc0py.backends.gpu.options import GpuOptions
    from lc0py.gpu.cuda_platform import CudaPlatform
    from lc0py.tools.verify import random_planes_batch
    from lc0py.weights.presets import random_network

    check("imports")
    p = CudaPlatform(0)
    check("platform")
    fp8 = p.cc >= 89
    configs = [("res-tiny", "max_batch=16", {"filters": 32, "se_hidden": 8})]
    if fp8:
        for scales in ("channel", "tensor"):
            for wino in ("off", "on"):
                configs.append(("res-tiny", f"max_batch=16,precision=fp8,fp8_scales={scales},winograd={wino}",
                                {"filters": 64, "se_hidden": 8}))
    configs.append(("tiny", "max_batch=16", {}))
    if fp8:
        configs.append(("tiny", "max_batch=16,precision=fp8", {}))
    for preset, text, over in configs:
        name = f"{preset} {text}"
        try:
            net = random_network(preset, 11, **over)
            gpu = GpuNetwork(p, net, fp16=True, options=GpuOptions.from_text(text))
            check(f"{name}: built")
            try:
                gpu.evaluate_traced(random_planes_batch(16, 5), flash=False)
                check(f"{name}: traced")
                out = gpu.submit(random_planes_batch(16, 6)).result()
                check(f"{name}: submitted")
                del out
                for k in (1, 3, 9, 16):
                    gpu.submit(random_planes_batch(k, 7 + k)).result()
                check(f"{name}: four batch sizes")
            finally:
                gpu.close()
            check(f"{name}: closed")
        except Exception as exc:  # noqa: BLE001 -- report and go on to the next configuration
            line = str(exc).splitlines()[0] if str(exc) else ""
            print(f"{name}: ERROR {type(exc).__name__}: {line}", flush=True)
    print(f"host memory check: {'PASS' if bad == 0 else f'FAIL ({bad} damaged steps)'}", flush=True)
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
