import sys, statistics
sys.path.insert(0, 'scripts/bench')
import torch
from torch.profiler import ProfilerActivity, profile
from graph_replay import Variant
m, k, n = (int(x) for x in sys.argv[2].split("x"))
a = Variant("cuda-fp16", sys.argv[1], "", 16); ga = a.graph(1)
def meas():
    a.pass_ms(ga, 60)
    return statistics.median([a.pass_ms(ga, 300) for _ in range(3)])
t0 = meas()
x = torch.randn(m, k, device="cuda", dtype=torch.float16); w = torch.randn(k, n, device="cuda", dtype=torch.float16)
with profile(activities=[ProfilerActivity.CUDA]) as p:
    y = x @ w; torch.cuda.synchronize()
names = sorted({e.name[:70] for e in p.events() if e.device_type.name == "CUDA"})
t1 = meas()
print(f"{sys.argv[2]:16s} b1 {t0:.4f} -> {t1:.4f} ms (x{t1/t0:.3f})  kernels: {names}", flush=True)
