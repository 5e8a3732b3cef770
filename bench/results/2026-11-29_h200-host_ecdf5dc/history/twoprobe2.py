import sys, statistics, gc, os
sys.path.insert(0, 'scripts/bench')
from graph_replay import Variant, planes
w = sys.argv[1]; mode = sys.argv[2]
def meas(v, g, label, rounds=3):
    v.pass_ms(g, 60)
    x = [v.pass_ms(g, 300) for _ in range(rounds)]
    print(f"{mode:10s} {label:44s} {statistics.median(x):.4f} ms  " + " ".join(f"{y:.4f}" for y in x), flush=True)
a = Variant("cuda-fp16", w, "", 64); ga = a.graph(1)
meas(a, ga, "A alone")
if mode == "owngraph":
    for n in (2, 3, 4, 8, 16, 64):
        a.graph(n); meas(a, ga, f"A after its graph for {n}")
elif mode == "eagerB":
    b = Variant("cuda-fp16", w, "graphs=off", 64)
    meas(a, ga, "A, B created (graphs=off)")
    b.gpu.submit(planes(1, 1)).result(); meas(a, ga, "A, B ran one eager pass")
elif mode == "eagerA":
    a.gpu.submit(planes(1, 1), use_graph=False).result(); meas(a, ga, "A ran one eager pass itself")
    a.gpu.submit(planes(2, 1), use_graph=False).result(); meas(a, ga, "A ran one eager pass of 2")
elif mode == "captureB":
    b = Variant("cuda-fp16", w, "", 64)
    b.gpu.submit(planes(1, 1)).result(); meas(a, ga, "A, B captured its graph for 1")
