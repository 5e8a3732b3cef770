"""Prepare time (every graph bucket to 1024) with gemm_tune cold / warm / off, and the choices made."""
import sys, time
from lc0py.backends.registry import create_backend
net, mode = sys.argv[1], sys.argv[2]
opts = "max_batch=1024" + (",gemm_tune=off" if mode == "off" else "")
t0 = time.perf_counter()
b = create_backend("cuda-fp16", net, opts)
t1 = time.perf_counter()
b.prepare(1024)
t2 = time.perf_counter()
algos = b.gpu.p.gemm_algos
print(f"{mode}: create {t1 - t0:.2f} s, prepare to 1024 {t2 - t1:.2f} s; timed now {len(algos.timings) if algos else 0}, "
      f"kept {len(algos.store.choices) if algos else 0}, chosen {sum(1 for v in algos.store.choices.values() if v['algo']) if algos else 0}")
if algos and mode == "cold":
    rows = sorted(algos.timings.items(), key=lambda kv: -kv[1][0])
    tot_d = sum(d for d, _ in algos.timings.values()); tot_b = sum(b_ if b_ else d for d, b_ in algos.timings.values())
    print(f"sum over timed problems: cublasGemmEx {tot_d*1e3:.0f} us, chosen {tot_b*1e3:.0f} us ({tot_d/tot_b:.3f}x)")
    for k, (d, best) in rows:
        print(f"  {k}: {d*1e3:8.1f} us -> {'   same' if best is None else f'{best*1e3:8.1f} us ({d/best:.3f}x)'}")
