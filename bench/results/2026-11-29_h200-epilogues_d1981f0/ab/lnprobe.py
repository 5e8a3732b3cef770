"""residual_layernorm and bias_act alone at T82's 1024-position shapes, several launch shapes,
against the HBM ceiling (D2D copy of the same bytes). Device time by events, median of 7 x 30."""
import sys, statistics
sys.path.insert(0, 'scripts/bench')
import numpy as np
from graph_replay import Variant
from lc0py.backends.gpu.ops import P, I, F, ln_config
w = sys.argv[1]
v = Variant("cuda-fp16", w, "", 64)
ops, p = v.gpu.ops, v.platform
st = ops.main
e0, e1 = p.create_event(timing=True), p.create_event(timing=True)
def timeit(f, reps=30):
    f(); f(); p.synchronize(st)
    ts = []
    for _ in range(7):
        p.event_record(e0.handle, st)
        for _ in range(reps): f()
        p.event_record(e1.handle, st); p.event_synchronize(e1.handle)
        ts.append(p.event_elapsed_ms(e0.handle, e1.handle) / reps * 1e3)
    return statistics.median(ts)
rows = int(sys.argv[2]) if len(sys.argv) > 2 else 65536
rng = np.random.default_rng(0)
def dev(nel):
    ptr = p.alloc(nel * 2)
    a = rng.standard_normal(nel).astype(np.float16)
    p.copy_h2d(ptr, a, nel * 2, st); p.synchronize(st)
    return ptr
for n in (768,):
    y, out, skip = dev(rows * n), dev(rows * n), dev(rows * n)
    bias, gamma, beta = dev(n), dev(n), dev(n)
    nb = rows * n * 2
    print(f"rows {rows} x {n}: D2D copy {timeit(lambda: p.copy_d2d(out, y, nb, st)):.1f} us ({nb/1e6:.1f} MB each way)")
    base = ln_config(n, 8, 3)
    for th, rp in ((base["LC0_LN_THREADS"], base["LC0_LN_ROWS"]), (32, 4), (32, 16), (64, 4), (64, 8), (96, 2), (96, 4), (96, 8), (128, 2)):
        cfg = dict(base, LC0_LN_THREADS=th, LC0_LN_ROWS=rp)
        fn = ops.function("layernorm.hip", "residual_layernorm", cfg)
        for sk in (0, skip):
            args = [P(y), P(bias), P(sk), P(out), P(gamma), P(beta), I(rows), F(1.0), F(1e-6), I(3)]
            grid = ((rows + rp - 1) // rp, 1, 1)
            us = timeit(lambda: p.launch(fn, grid, (th * rp, 1, 1), 0, st, args))
            traffic = nb * (3 if sk else 2)
            print(f"  LN threads/row {th:3d} rows/block {rp:2d} skip {'yes' if sk else 'no '}: {us:6.1f} us  {traffic/us/1e6:.2f} TB/s{'  (default)' if (th, rp) == (base['LC0_LN_THREADS'], base['LC0_LN_ROWS']) else ''}")
n = 1024
y, out = dev(rows * n), dev(rows * n)
bias = dev(n)
nb = rows * n * 2
print(f"rows {rows} x {n}: D2D copy {timeit(lambda: p.copy_d2d(out, y, nb, st)):.1f} us")
for act in (3, 1, 8):
    us = timeit(lambda: ops.bias_act(y, bias, rows, n, act))
    print(f"  bias_act act {act}: {us:6.1f} us  {2*nb/us/1e6:.2f} TB/s")
