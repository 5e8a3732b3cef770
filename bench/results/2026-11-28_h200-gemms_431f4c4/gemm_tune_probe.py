"""De-risk: would choosing cuBLASLt algorithms by timing (TunableOp) shorten T82's small-batch GEMMs?
Records the GEMMs of one lc0py forward (graphs off) at each batch, then times each shape in torch
(C = A @ B^T, fp16) in a captured CUDA graph of 50 calls: default heuristic vs TunableOp's pick."""
import os, sys, json, collections
import numpy as np
import torch
from lc0py.backends.base import PlanesBatch
from lc0py.backends.registry import create_backend
from lc0py.gpu import vendor_platform as VP

W = sys.argv[1]
batches = [int(x) for x in sys.argv[2].split(",")]
calls = []
orig = VP.VendorPlatform.gemm
def rec(self, stream, m, n, k, a, lda, b, ldb, c, ldc, **kw):
    calls.append((m, n, k, lda, ldb, ldc, bool(kw.get("trans_a")), bool(kw.get("trans_b")), kw.get("batch", 1), float(kw.get("beta", 0.0))))
    return orig(self, stream, m, n, k, a, lda, b, ldb, c, ldc, **kw)
VP.VendorPlatform.gemm = rec
shapes = {}
for bsz in batches:
    be = create_backend("cuda-fp16", W, f"graphs=off,max_batch={bsz}")
    rng = np.random.default_rng(3)
    pb = PlanesBatch(rng.integers(0, 2**63, size=(bsz, 112), dtype=np.uint64), rng.uniform(0.5, 1.5, (bsz, 112)).astype(np.float32))
    be.evaluate(pb)
    calls.clear()
    be.evaluate(pb)
    shapes[bsz] = collections.Counter(calls)
    be.close()
VP.VendorPlatform.gemm = orig

def time_shape(m, n, k, beta):
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(n, k, device="cuda", dtype=torch.float16)
    c = torch.empty(m, n, device="cuda", dtype=torch.float16)
    for _ in range(3):
        torch.matmul(a, b.t(), out=c)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(50):
            torch.matmul(a, b.t(), out=c)
    g.replay(); torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ts = []
    for _ in range(7):
        s.record(); g.replay(); e.record(); e.synchronize(); ts.append(s.elapsed_time(e) * 1000 / 50)
    return float(np.median(ts))

tuned = os.environ.get("PYTORCH_TUNABLEOP_ENABLED") == "1"
out = {}
for bsz, cnt in shapes.items():
    rows = []
    for (m, n, k, lda, ldb, ldc, ta, tb, bt, beta), c in sorted(cnt.items()):
        if bt != 1 or ta or not tb:
            rows.append(dict(m=m, n=n, k=k, count=c, skipped=True)); continue
        us = time_shape(m, n, k, beta)
        rows.append(dict(m=m, n=n, k=k, count=c, us=us))
    out[bsz] = rows
    tot = sum(r["us"] * r["count"] for r in rows if "us" in r)
    print(f"batch {bsz} ({'tunableop' if tuned else 'default'}): {sum(cnt.values())} gemms, timed sum {tot:.1f} us")
    for r in rows:
        print("  ", r)
json.dump(out, open(sys.argv[3], "w"))
