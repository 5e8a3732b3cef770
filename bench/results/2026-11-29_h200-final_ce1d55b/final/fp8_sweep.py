"""Every algorithm cuBLASLt's heuristic offers for T82's FP8 GEMMs (outer-vector scales, as cuda-fp8's
default) at 256/1024 positions, each timed in a graph of 10 calls, against the heuristic's first."""
import ctypes, json, sys
import numpy as np
import torch
from lc0py.gpu.cublaslt import (load_cublaslt, HeuristicResult, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16F,
    CUDA_R_8F_E4M3, DESC_TRANSA, DESC_TRANSB, CUBLAS_OP_T, CUBLAS_OP_N, PREF_MAX_WORKSPACE_BYTES,
    DESC_A_SCALE_POINTER, DESC_B_SCALE_POINTER, DESC_A_SCALE_MODE, DESC_B_SCALE_MODE, SCALE_OUTER_VEC_32F)
lib = load_cublaslt(); WS = 32 << 20
ws = torch.empty(WS, dtype=torch.uint8, device="cuda")
h = ctypes.c_void_p(); assert lib.cublasLtCreate(ctypes.byref(h)) == 0
pref = ctypes.c_void_p(); lib.cublasLtMatmulPreferenceCreate(ctypes.byref(pref))
w = ctypes.c_uint64(WS); lib.cublasLtMatmulPreferenceSetAttribute(pref, PREF_MAX_WORKSPACE_BYTES, ctypes.byref(w), 8)
def graph_time(fn, n=10):
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        for _ in range(3): fn()
    torch.cuda.synchronize(); g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(n): fn()
    g.replay(); torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True); ts = []
    for _ in range(5):
        e0.record(); g.replay(); e1.record(); e1.synchronize(); ts.append(e0.elapsed_time(e1) * 1000 / n)
    return float(np.median(ts))
def sset(desc, attr, v): lib.cublasLtMatmulDescSetAttribute(desc, attr, ctypes.byref(v), ctypes.sizeof(v))
def sweep(m, n, k, beta):
    xq = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn); wq = torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn)
    d = torch.randn(m, n, device="cuda", dtype=torch.float16)
    xs = torch.rand(m, device="cuda") + 0.5; wsc = torch.rand(n, device="cuda") + 0.5
    desc = ctypes.c_void_p(); lib.cublasLtMatmulDescCreate(ctypes.byref(desc), CUBLAS_COMPUTE_32F, CUDA_R_32F)
    sset(desc, DESC_TRANSA, ctypes.c_int(CUBLAS_OP_T)); sset(desc, DESC_TRANSB, ctypes.c_int(CUBLAS_OP_N))
    sset(desc, DESC_A_SCALE_MODE, ctypes.c_int(SCALE_OUTER_VEC_32F)); sset(desc, DESC_B_SCALE_MODE, ctypes.c_int(SCALE_OUTER_VEC_32F))
    sset(desc, DESC_A_SCALE_POINTER, ctypes.c_void_p(wsc.data_ptr())); sset(desc, DESC_B_SCALE_POINTER, ctypes.c_void_p(xs.data_ptr()))
    lay = []
    for dt, rows, cols, ld in ((CUDA_R_8F_E4M3, k, n, k), (CUDA_R_8F_E4M3, k, m, k), (CUDA_R_16F, n, m, n)):
        l = ctypes.c_void_p(); lib.cublasLtMatrixLayoutCreate(ctypes.byref(l), dt, rows, cols, ld); lay.append(l)
    res = (HeuristicResult * 16)(); cnt = ctypes.c_int(0)
    st = lib.cublasLtMatmulAlgoGetHeuristic(h, desc, lay[0], lay[1], lay[2], lay[2], pref, 16, res, ctypes.byref(cnt))
    al, be = ctypes.c_float(1.0), ctypes.c_float(beta); times = []
    for i in range(cnt.value if st == 0 else 0):
        if res[i].state != 0: continue
        def call(i=i):
            r = lib.cublasLtMatmul(h, desc, ctypes.byref(al), ctypes.c_void_p(wq.data_ptr()), lay[0], ctypes.c_void_p(xq.data_ptr()), lay[1],
                ctypes.byref(be), ctypes.c_void_p(d.data_ptr()), lay[2], ctypes.c_void_p(d.data_ptr()), lay[2], ctypes.byref(res[i], 0),
                ctypes.c_void_p(ws.data_ptr()), WS, ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
            assert r == 0, r
        try: times.append((i, graph_time(call)))
        except Exception: times.append((i, None))
    ok = [t for t in times if t[1] is not None]; best = min(ok, key=lambda t: t[1])
    return dict(m=m, n=n, k=k, beta=beta, n_algos=len(ok), first_us=ok[0][1], best_us=best[1], best_index=best[0], all=times)
out = []
for b in (256, 1024):
    M = 64 * b
    for s in [(M, 2336, 768, 0.0), (M, 768, 768, 1.0), (M, 1024, 768, 0.0), (M, 768, 1024, 1.0), (24 * b, 4096, 256, 0.0)]:
        r = sweep(*s); out.append(r)
        print(f"{r['m']}x{r['n']}x{r['k']} beta {r['beta']}: first {r['first_us']:.1f} us, best {r['best_us']:.1f} (#{r['best_index']} of {r['n_algos']}) x{r['first_us']/r['best_us']:.3f}", flush=True)
json.dump(out, open(sys.argv[1], "w"))
