import sys, statistics, collections
sys.path.insert(0, 'scripts/bench')
import torch
from torch.profiler import ProfilerActivity, profile
from graph_replay import Variant, planes
w = sys.argv[1]
a = Variant("cuda-fp16", w, "", 64); ga = a.graph(1)
def prof(label):
    a.pass_ms(ga, 60)
    print(label, "pass", round(a.pass_ms(ga, 300), 4), "ms", flush=True)
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        a.pass_ms(ga, 20)
    d = collections.defaultdict(float); c = collections.Counter()
    for e in p.events():
        if e.device_type.name == "CUDA":
            d[e.name] += e.device_time_total if hasattr(e, "device_time_total") else e.cuda_time_total
            c[e.name] += 1
    return d, c
d0, c0 = prof("before")
a.gpu.submit(planes(2, 1), use_graph=False).result()
d1, c1 = prof("after eager batch 2")
rows = sorted(set(d0) | set(d1), key=lambda k: -(d1.get(k, 0) - d0.get(k, 0)))
tot0, tot1 = sum(d0.values()), sum(d1.values())
print(f"total kernel us per pass: {tot0/20:.1f} -> {tot1/20:.1f}")
for k in rows[:25]:
    print(f"{(d1.get(k,0)-d0.get(k,0))/20:8.2f} us/pass  {d0.get(k,0)/20:8.2f} -> {d1.get(k,0)/20:8.2f}  n {c0.get(k,0)//20}/{c1.get(k,0)//20}  {k[:110]}")
