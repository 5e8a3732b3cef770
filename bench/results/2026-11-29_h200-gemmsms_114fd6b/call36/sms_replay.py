"""Graph replay (device time a pass), three variants in one process: tuned GEMMs without the
SM-targeted ones (as 6836297), tuned with them (this tree), gemm_tune=off."""
import statistics, sys
sys.path.insert(0, "scripts/bench")
from graph_replay import Variant
from lc0py.gpu.cuda_platform import CudaPlatform

net, sizes, rounds = sys.argv[1], [int(s) for s in sys.argv[2].split(",")], int(sys.argv[3])
names = ["no-sms", "sms", "off"]
vs = [Variant("cuda-fp16", net, o, max(sizes)) for o in ("", "", "gemm_tune=off")]
p0 = vs[0].platform
p0._tuned_gemm = lambda h, st, call, dt, a, b, sms: False if sms else CudaPlatform._tuned_gemm(p0, h, st, call, dt, a, b, sms)
graphs = {(i, n): v.graph(n) for i, v in enumerate(vs) for n in sizes}
for key, g in graphs.items():
    vs[key[0]].pass_ms(g, 50)
t = {k: [] for k in graphs}
for r in range(rounds):
    order = [0, 1, 2] if r % 2 == 0 else [2, 1, 0]
    for n in sizes:
        for i in order:
            t[(i, n)].append(vs[i].pass_ms(graphs[(i, n)], 200))
print(f"{net}: ms a pass (median of {rounds} rounds x 200 replays); x = no-sms time / this")
for n in sizes:
    base = t[(0, n)]
    cells = []
    for i in range(3):
        rat = [b / x for b, x in zip(base, t[(i, n)])]
        cells.append(f"{names[i]} {statistics.median(t[(i, n)]):.4f} ms x{statistics.median(rat):.3f} [{min(rat):.3f}-{max(rat):.3f}]")
    print(f"{n:5d}  " + "  |  ".join(cells))
sms = vs[1].platform.gemm_algos.timings
print("sms problems timed:", sum(1 for k in sms if " sms " in k), "chosen:", sum(1 for k, (d, b) in sms.items() if " sms " in k and b is not None))
for v in vs:
    v.close()
