import sys, statistics
sys.path.insert(0, 'scripts/bench')
from graph_replay import Variant, planes
from lc0py.gpu import cuda_platform as cp
mode = sys.argv[2]
a = Variant("cuda-fp16", sys.argv[1], "", 64); ga = a.graph(1)
drv = a.platform._drv
def limits():
    L = drv.CUlimit
    out = []
    for nm in ("CU_LIMIT_STACK_SIZE", "CU_LIMIT_MALLOC_HEAP_SIZE", "CU_LIMIT_PRINTF_FIFO_SIZE", "CU_LIMIT_PERSISTING_L2_CACHE_SIZE"):
        try: out.append(f"{nm[9:]}={int(cp._check(drv.cuCtxGetLimit(getattr(L, nm)), nm))}")
        except Exception as e: out.append(f"{nm}=?")
    try: out.append(f"cachecfg={cp._check(drv.cuCtxGetCacheConfig(), 'cc')}")
    except Exception: pass
    return " ".join(out)
def meas(label):
    a.pass_ms(ga, 60)
    x = [a.pass_ms(ga, 300) for _ in range(3)]
    print(f"{mode:8s} {label:34s} b1 {statistics.median(x):.4f} ms   {limits()}", flush=True)
meas("fresh")
if mode == "torch":
    import torch
    x = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
    (x @ x).sum().item(); meas("after torch 4096^3 matmul")
    y = torch.randn(128, 768, device="cuda", dtype=torch.float16); w = torch.randn(768, 2304, device="cuda", dtype=torch.float16)
    (y @ w).sum().item(); meas("after torch 128x768x2304")
elif mode == "eager2":
    a.gpu.submit(planes(2, 1), use_graph=False).result(); meas("after eager batch 2")
elif mode == "eager1x":
    for _ in range(3): a.gpu.submit(planes(1, 1), use_graph=False).result()
    meas("after 3 eager batch 1")
    a.gpu.submit(planes(2, 1), use_graph=False).result(); meas("after eager batch 2")
