import sys, statistics
sys.path.insert(0, 'scripts/bench')
from graph_replay import Variant
mbs = [int(x) for x in sys.argv[2].split(",")]
sizes = [int(x) for x in sys.argv[3].split(",")]
vs = {m: Variant("cuda-fp16", sys.argv[1], "", m) for m in mbs}
for m, v in vs.items():
    print("max_batch", m, "buffer MB", round(v.gpu.runner.buffer_bytes / 2**20, 1), "base", hex(v.gpu.runner._buf_base), flush=True)
g = {(m, n): vs[m].graph(n) for m in mbs for n in sizes if n <= m}
for k, gr in g.items(): vs[k[0]].pass_ms(gr, 75)
t = {k: [] for k in g}
for r in range(6):
    keys = list(g) if r % 2 == 0 else list(reversed(list(g)))
    for k in keys:
        t[k].append(vs[k[0]].pass_ms(g[k], 300))
for k in sorted(t, key=lambda k: (k[1], k[0])):
    print(f"size {k[1]:4d} max_batch {k[0]:5d}  {statistics.median(t[k]):.4f} ms  rounds " + " ".join(f"{x:.4f}" for x in t[k]))
