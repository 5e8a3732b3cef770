"""Every algorithm cuBLASLt's heuristic offers (up to 32) for T82's fp16 GEMM shapes at batch 256/1024,
each timed in a captured CUDA graph of 50 calls; against torch.matmul (cublasGemmEx's choice)."""
import ctypes, json, sys
import numpy as np
import torch
from lc0py.gpu.cublaslt import (load_cublaslt, HeuristicResult, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16F,
                                DESC_TRANSA, DESC_TRANSB, CUBLAS_OP_T, CUBLAS_OP_N, PREF_MAX_WORKSPACE_BYTES)

lib = load_cublaslt()
WS = 32 << 20
ws = torch.empty(WS, dtype=torch.uint8, device="cuda")
h = ctypes.c_void_p(); assert lib.cublasLtCreate(ctypes.byref(h)) == 0
pref = ctypes.c_void_p(); lib.cublasLtMatmulPreferenceCreate(ctypes.byref(pref))
w = ctypes.c_uint64(WS); lib.cublasLtMatmulPreferenceSetAttribute(pref, PREF_MAX_WORKSPACE_BYTES, ctypes.byref(w), 8)

def graph_time(fn):
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        for _ in range(3): fn()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(NCALL): fn()
    g.replay(); torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ts = []
    for _ in range(7):
        e0.record(); g.replay(); e1.record(); e1.synchronize(); ts.append(e0.elapsed_time(e1) * 1000 / NCALL)
    return float(np.median(ts))

def sweep(m, n, k, beta):
    x = torch.randn(m, k, device="cuda", dtype=torch.float16)
    wt = torch.randn(n, k, device="cuda", dtype=torch.float16)
    c = torch.randn(m, n, device="cuda", dtype=torch.float16)
    base = graph_time(lambda: torch.matmul(x, wt.t(), out=c))
    desc = ctypes.c_void_p(); lib.cublasLtMatmulDescCreate(ctypes.byref(desc), CUBLAS_COMPUTE_32F, CUDA_R_32F)
    for attr, v in ((DESC_TRANSA, CUBLAS_OP_T), (DESC_TRANSB, CUBLAS_OP_N)):
        vv = ctypes.c_int(v); lib.cublasLtMatmulDescSetAttribute(desc, attr, ctypes.byref(vv), 4)
    lay = []
    for rows, cols, ld in ((k, n, k), (k, m, k), (n, m, n)):
        l = ctypes.c_void_p(); lib.cublasLtMatrixLayoutCreate(ctypes.byref(l), CUDA_R_16F, rows, cols, ld); lay.append(l)
    res = (HeuristicResult * 64)(); cnt = ctypes.c_int(0)
    st = lib.cublasLtMatmulAlgoGetHeuristic(h, desc, lay[0], lay[1], lay[2], lay[2], pref, 64, res, ctypes.byref(cnt))
    al, be = ctypes.c_float(1.0), ctypes.c_float(beta)
    times = []
    for i in range(cnt.value if st == 0 else 0):
        if res[i].state != 0: continue
        def call(i=i):
            s = torch.cuda.current_stream().cuda_stream
            r = lib.cublasLtMatmul(h, desc, ctypes.byref(al), ctypes.c_void_p(wt.data_ptr()), lay[0],
                                   ctypes.c_void_p(x.data_ptr()), lay[1], ctypes.byref(be), ctypes.c_void_p(c.data_ptr()), lay[2],
                                   ctypes.c_void_p(c.data_ptr()), lay[2], ctypes.byref(res[i], 0), ctypes.c_void_p(ws.data_ptr()), WS, ctypes.c_void_p(s))
            assert r == 0, r
        try:
            times.append((i, graph_time(call)))
        except Exception as exc:
            times.append((i, None))
    ok = [t for t in times if t[1] is not None]
    best = min(ok, key=lambda t: t[1]) if ok else (None, None)
    return dict(m=m, n=n, k=k, beta=beta, torch_us=base, n_algos=len(ok), heuristic0_us=ok[0][1] if ok else None,
                best_us=best[1], best_index=best[0], all=times)

# T82's dense GEMMs (m rows = 64*batch for token GEMMs)
NCALL = 10
shapes = []
for b in (256, 1024):
    M = 64 * b
    shapes += [(M, 2336, 768, 0.0), (M, 2304, 768, 0.0), (M, 768, 768, 1.0), (M, 1024, 768, 0.0), (M, 768, 1024, 1.0),
               (b, 256, 2048, 0.0), (b, 6144, 256, 0.0), (24 * b, 4096, 256, 0.0)]
out = []
for s in shapes:
    r = sweep(*s)
    out.append(r)
    print(r, flush=True)
json.dump(out, open(sys.argv[1], "w"))
for b, lo in ((256, 0), (1024, 8)):
    rows = out[lo:lo + 8]
    print(f"batch {b}: torch {sum(r['torch_us'] for r in rows):.1f} us, heuristic #0 {sum(r['heuristic0_us'] or 0 for r in rows):.1f}, best {sum(r['best_us'] or 0 for r in rows):.1f} (one of each shape)")
