"""Host speed probes: pure Python, numpy small ops, a numba loop."""
import time, numpy as np
def t(f, n=5):
    r = []
    for _ in range(n):
        t0 = time.perf_counter(); f(); r.append(time.perf_counter() - t0)
    return sorted(r)[len(r) // 2]
def py_loop():
    s = 0
    for i in range(3_000_000):
        s += i & 7
def py_dict():
    d = {}
    for i in range(500_000):
        d[i] = i
    for i in range(500_000):
        d[i] += 1
a = np.arange(64, dtype=np.float32)
def np_small():
    for _ in range(100_000):
        a.sum()
def np_alloc():
    for _ in range(100_000):
        np.zeros(256, np.int32)
import numba
@numba.njit(cache=False)
def nb_walk(n, idx, v):
    s = 0.0
    j = 0
    for i in range(n):
        j = idx[j]
        s += v[j]
    return s
idx = np.random.default_rng(0).permutation(1 << 22).astype(np.int64)
v = np.random.default_rng(1).random(1 << 22)
nb_walk(10, idx, v)
@numba.njit(cache=False)
def nb_arith(n):
    s = 0.0
    x = 1.0
    for i in range(n):
        x = x * 1.0000001 + 0.5
        s += np.log(x)
    return s
nb_arith(10)
for name, f in [("py_loop", py_loop), ("py_dict", py_dict), ("np_small", np_small), ("np_alloc", np_alloc),
                ("nb_walk_4M_random", lambda: nb_walk(4_000_000, idx, v)), ("nb_arith_10M", lambda: nb_arith(10_000_000))]:
    print(f"{name:20s} {t(f)*1000:8.1f} ms")
import llvmlite.binding as llvm
print("host cpu", llvm.get_host_cpu_name(), "numba", numba.__version__)
