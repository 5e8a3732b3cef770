"""Experiment: dense_rows with its weight loads before the dependent-launch wait, A/B in one process."""
import os, sys, statistics
sys.argv = [sys.argv[0]] + sys.argv[1:]
from scripts.bench.graph_replay import Variant
w = sys.argv[1]
sizes = [1, 2, 3]
vs = []
os.environ.pop("LC0PY_EXP_DR_PREFETCH", None)
vs.append(Variant("cuda-fp16", w, "", 3))
os.environ["LC0PY_EXP_DR_PREFETCH"] = "1"
vs.append(Variant("cuda-fp16", w, "", 3))
os.environ.pop("LC0PY_EXP_DR_PREFETCH", None)
vs.append(Variant("cuda-fp16", w, "smolgen_rows_max=3", 3))
os.environ["LC0PY_EXP_DR_PREFETCH"] = "1"
vs.append(Variant("cuda-fp16", w, "smolgen_rows_max=3", 3))
names = ["base", "prefetch", "rows3", "rows3+prefetch"]
g = {(i, n): v.graph(n) for i, v in enumerate(vs) for n in sizes}
for k, gg in g.items(): vs[k[0]].pass_ms(gg, 50)
t = {k: [] for k in g}
for r in range(6):
    order = list(range(len(vs)))
    if r % 2: order.reverse()
    for n in sizes:
        for i in order:
            t[(i, n)].append(vs[i].pass_ms(g[(i, n)], 300))
for n in sizes:
    b = t[(0, n)]
    for i in range(len(vs)):
        rr = [x / y for x, y in zip(b, t[(i, n)])]
        print(f"{n} {names[i]:16s} {statistics.median(t[(i, n)]):.4f} ms x{statistics.median(rr):.3f} " + " ".join(f"{x:.3f}" for x in rr))
