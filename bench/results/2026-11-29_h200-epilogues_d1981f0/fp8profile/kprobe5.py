"""Per-kernel device time of T82's batch-N graph for several --backend-opts variants (CUPTI via torch)."""
import sys, collections
sys.path.insert(0, 'scripts/bench')
from torch.profiler import ProfilerActivity, profile
from graph_replay import Variant
w, n = sys.argv[1], int(sys.argv[2])
variants = sys.argv[3].split(";")
vs = [Variant(sys.argv[5] if len(sys.argv) > 5 else "cuda-fp16", w, o, max(n, 64)) for o in variants]
gs = [v.graph(n) for v in vs]
for v, g in zip(vs, gs):
    v.pass_ms(g, 100)
    ms = sorted(v.pass_ms(g, 200) for _ in range(5))[2]
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        v.pass_ms(g, 20)
    d = collections.defaultdict(float); c = collections.Counter()
    for e in p.events():
        if e.device_type.name == "CUDA":
            d[e.name] += getattr(e, "device_time_total", None) or e.cuda_time_total
            c[e.name] += 1
    print(f"== '{v.opts}' batch {n}: pass {ms:.4f} ms (median of 5 x 200 replays); kernels {sum(d.values())/20:.1f} us a pass")
    for k in sorted(d, key=lambda k: -d[k])[:int(sys.argv[4]) if len(sys.argv) > 4 else 14]:
        print(f"  {d[k]/20:8.2f} us/pass  n {c[k]//20:3d}  {d[k]/c[k]:6.2f} us each  {k[:90]}")
