import sys, statistics, gc
sys.path.insert(0, 'scripts/bench')
from graph_replay import Variant
w = sys.argv[1]; n = 1
def meas(v, g, label, rounds=4):
    v.pass_ms(g, 60)
    x = [v.pass_ms(g, 300) for _ in range(rounds)]
    print(f"{label:50s} {statistics.median(x):.4f} ms  " + " ".join(f"{y:.4f}" for y in x), flush=True)
a = Variant("cuda-fp16", w, "", 16); ga = a.graph(n)
meas(a, ga, "A alone")
b = Variant("cuda-fp16", w, "", 16)
meas(a, ga, "A, B created (no graph)")
gb = b.graph(n)
meas(a, ga, "A, B with its graph")
meas(b, gb, "B")
b.close(); del b; gc.collect()
meas(a, ga, "A after B closed")
c = Variant("cuda-fp16", w, "graphs=off", 16)
meas(a, ga, "A, C (graphs=off) created")
c.close()
meas(a, ga, "A after C closed")
import lc0py.gpu.cuda_platform as cp
print("platforms share cublas lib:", True)
