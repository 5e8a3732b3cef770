"""The Winograd GEMM of a 256-filter body (36 batched [4B, 256] x [256, 256]^T, fp16) through the
backend's platform, with V and M element-major ([36, 4B, C]) or tile-major ([4B, 36, C]): median
of 50 CUDA-event timings each, the four combinations interleaved over 5 rounds.
    python3 gemm_layouts.py"""
import json, statistics
from lc0py.backends.gpu.platform import create_platform

p = create_platform("nvidia")
s = p.create_stream()
C = 256
for batch in (256, 1024):
    tiles = 4 * batch
    n = 36 * tiles * C
    v, u, m = p.alloc(2 * n), p.alloc(2 * 36 * C * C), p.alloc(2 * n)
    p.memset(v, 0x30, 2 * n, s)
    p.memset(u, 0x30, 2 * 36 * C * C, s)
    variants = {  # (lda, stride_a, ldc, stride_c)
        "V elem, M elem": (C, tiles * C, C, tiles * C),
        "V tile, M tile": (36 * C, C, 36 * C, C),
        "V tile, M elem": (36 * C, C, C, tiles * C),
        "V elem, M tile": (C, tiles * C, 36 * C, C),
    }
    e0, e1 = p.create_event(timing=True), p.create_event(timing=True)
    times = {k: [] for k in variants}
    for _ in range(5):
        for name, (lda, sa, ldc, sc) in variants.items():
            for i in range(13):
                e0.record(s)
                p.gemm(s, tiles, C, C, v, lda, u, C, m, ldc, dtype="fp16", trans_b=True, batch=36,
                       stride_a=sa, stride_b=C * C, stride_c=sc)
                e1.record(s)
                e1.synchronize()
                if i >= 3:
                    times[name].append(e0.elapsed_ms(e1) * 1e3)
    for name, t in times.items():
        us = statistics.median(t)
        print(json.dumps({"batch": batch, "layout": name, "median_us": round(us, 2),
                          "TB/s": round(2 * (2 * n + 36 * C * C) / us / 1e6, 3)}))
    for ptr in (v, u, m):
        p.free(ptr)
