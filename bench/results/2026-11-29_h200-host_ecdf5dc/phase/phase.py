import sys, statistics
sys.path.insert(0, 'scripts/bench')
import cupy as cp
from graph_replay import Variant, planes
a = Variant("cuda-fp16", sys.argv[1], "", 16); ga = a.graph(1)
nop = cp.RawKernel(r'extern "C" __global__ void nop(int* p){ if (p && threadIdx.x == 1023) p[0] = 1; }', "nop")
def meas():
    a.pass_ms(ga, 20)
    return statistics.median([a.pass_ms(ga, 200) for _ in range(3)])
print("fresh", round(meas(), 4), flush=True)
for k in [1, 1, 1, 2, 3, 4, 5, 7, 8, 16, 33, 66, 131, 132, 264, 1, 1]:
    nop((k,), (32,), (0,)); cp.cuda.runtime.deviceSynchronize()
    print(f"after nop grid {k:4d}: b1 {meas():.4f} ms", flush=True)
a.gpu.submit(planes(2, 1), use_graph=False).result()
print(f"after eager batch 2: b1 {meas():.4f} ms", flush=True)
for k in [1, 1, 1, 1, 1, 1, 1, 1]:
    nop((k,), (32,), (0,)); cp.cuda.runtime.deviceSynchronize()
    print(f"after nop grid {k:4d}: b1 {meas():.4f} ms", flush=True)
