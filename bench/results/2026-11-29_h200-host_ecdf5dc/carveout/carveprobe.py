import sys, statistics, os
sys.path.insert(0, 'scripts/bench')
from lc0py.gpu import cuda_platform as cp
mode = sys.argv[2]
orig = cp.CudaPlatform.get_function
def get_function(self, module, name):
    h = orig(self, module, name)
    if mode != "default":
        attr = self._drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT
        cp._check(self._drv.cuFuncSetAttribute(self._objs[h], attr, int(mode)), "carveout")
    return h
cp.CudaPlatform.get_function = get_function
from graph_replay import Variant, planes
w = sys.argv[1]
a = Variant("cuda-fp16", w, "", 64); ga = a.graph(1); g4 = a.graph(4) if len(sys.argv) > 3 else None
def meas(label):
    a.pass_ms(ga, 60)
    x = [a.pass_ms(ga, 300) for _ in range(3)]
    s = f"carveout {mode:8s} {label:28s} b1 {statistics.median(x):.4f} ms"
    if g4 is not None:
        a.pass_ms(g4, 60); s += f"  b4 {statistics.median([a.pass_ms(g4, 300) for _ in range(3)]):.4f} ms"
    print(s, flush=True)
meas("fresh")
a.gpu.submit(planes(2, 1), use_graph=False).result()
meas("after eager batch 2")
a.gpu.submit(planes(64, 1), use_graph=False).result()
meas("after eager batch 64")
