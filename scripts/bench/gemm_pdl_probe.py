"""Do cuBLAS's GEMM kernels wait for the kernel before them under a programmatic edge?

Our kernels take the programmatic dependent launch (docs/gpu-design.md §2); cuBLAS's GEMMs do not,
because cuBLAS's API takes no launch attributes. In a captured graph the edge into a GEMM's kernel
node can still be made programmatic afterwards, and that is safe only if the GEMM's kernel executes
``griddepcontrol.wait`` before it reads its inputs. This probe finds out, per GEMM shape:

* a producer kernel of ours lets its dependents launch at once (``griddepcontrol.launch_dependents``),
  then spins for ``--delay-us`` before it writes A = 1;
* the GEMM C = A·B (B = 1) follows it through a programmatic edge;
* C = K everywhere: the GEMM waited. C = 0 (or anything else): it read A before the producer wrote it.

Two controls show the probe can tell: a consumer kernel of ours without the wait must read stale
data through the same edge, one with the wait must not. Last, what a GEMM costs in a chain captured
as a graph (µs a step, medians of ``--reps`` launches of ``--pairs`` steps): a tiny kernel of ours
alone (dependent launch), the GEMM alone, and the two alternating.

On an H200 with the device image's cuBLAS (its ``nvjet`` kernels;
bench/results/2026-11-28_h200-gemmpdl_c094811) no GEMM waited, so the edges into cuBLAS's kernels
stay full dependencies (docs/performance.md §1).

    python scripts/bench/gemm_pdl_probe.py [--delay-us 200] [--pairs 60] [--reps 50]
"""

from __future__ import annotations

import argparse
import ctypes
import statistics
import sys
from pathlib import Path

import numpy as np

from lc0py.errors import BackendUnavailable
from lc0py.gpu.cuda_platform import CudaPlatform, _check

SOURCE = r"""
extern "C" __global__ void producer(u16* a, int n, u64 delay_ns) {
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    u64 t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < delay_ns);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) a[i] = 0x3C00;
}
extern "C" __global__ void consumer_nowait(const u16* a, u16* c, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) c[i] = a[i];
}
extern "C" __global__ void consumer_wait(const u16* a, u16* c, int n) {
    asm volatile("griddepcontrol.wait;" ::: "memory");
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) c[i] = a[i];
}
extern "C" __global__ void touch(u16* x, int n) {
    lc0_grid_dependency_sync();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) x[i] ^= 0;
}
"""

# T82's GEMMs at one position (M = 64 tokens) and sixteen, and smolgen's generator (M = heads)
SHAPES = [(64, 2336, 768), (64, 768, 768), (64, 1024, 768), (64, 768, 1024), (24, 4096, 256),
          (1024, 768, 768), (1024, 1024, 768), (384, 4096, 256)]


def kernel_nodes(drv, graph) -> list:
    nodes = _check(drv.cuGraphGetNodes(graph, 0), "cuGraphGetNodes")
    count = nodes[1] if isinstance(nodes, tuple) else nodes
    out = _check(drv.cuGraphGetNodes(graph, count), "cuGraphGetNodes")
    lst = out[0] if isinstance(out, tuple) else out
    kern = drv.CUgraphNodeType.CU_GRAPH_NODE_TYPE_KERNEL
    return [n for n in lst if _check(drv.cuGraphNodeGetType(n), "cuGraphNodeGetType") == kern]


def edges(drv, graph) -> list[tuple]:
    res = drv.cuGraphGetEdges(graph, 0)
    n = res[-1]
    res = drv.cuGraphGetEdges(graph, n)
    assert int(res[0]) == 0, res[0]
    frm, to = res[1], res[2]
    data = res[3] if len(res) > 4 else [None] * len(frm)
    return list(zip(frm[:n], to[:n], data[:n], strict=True))


def node_name(drv, node) -> str:
    params = _check(drv.cuGraphKernelNodeGetParams(node), "cuGraphKernelNodeGetParams")
    try:
        name = _check(drv.cuFuncGetName(params.func), "cuFuncGetName")
        return name.decode() if isinstance(name, bytes) else str(name)
    except Exception:  # noqa: BLE001 - a name is only for the report
        return "?"


def make_programmatic(drv, graph, targets: set[int]) -> int:
    """Turn every kernel → kernel edge into a node of ``targets`` programmatic; returns how many."""
    kern = {int(n) for n in kernel_nodes(drv, graph)}
    done = 0
    for frm, to, _data in edges(drv, graph):
        if int(frm) not in kern or int(to) not in targets:
            continue
        default = drv.CUgraphEdgeData()
        _check(drv.cuGraphRemoveDependencies(graph, [frm], [to], [default], 1), "cuGraphRemoveDependencies")
        e = drv.CUgraphEdgeData()
        e.type = drv.CUgraphDependencyType.CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC
        e.from_port = drv.CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC
        _check(drv.cuGraphAddDependencies(graph, [frm], [to], [e], 1), "cuGraphAddDependencies")
        done += 1
    return done


class Probe:
    def __init__(self) -> None:
        self.plat = CudaPlatform(0)
        self.drv = self.plat._drv
        prelude = (Path(__file__).resolve().parents[2] / "lc0py/kernels/prelude_nvrtc.h").read_text()
        binary = self.plat.compile(SOURCE, "probe.cu", [], {"prelude_nvrtc.h": prelude})
        mod = self.plat.load_module(binary)
        names = ("producer", "consumer_nowait", "consumer_wait", "touch")
        self.fn = {k: self.plat.get_function(mod, k) for k in names}
        self.stream = self.plat.create_stream()

    def capture(self, body, targets_of) -> tuple[object, int, list[str]]:
        body()  # once outside the capture: cuBLAS makes its handle and picks its kernels here
        self.plat.synchronize(self.stream)
        drv, s = self.drv, self.plat._stream(self.stream)
        mode = drv.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
        _check(drv.cuStreamBeginCapture(s, mode), "cuStreamBeginCapture")
        body()
        graph = _check(drv.cuStreamEndCapture(s), "cuStreamEndCapture")
        names = [node_name(drv, n) for n in kernel_nodes(drv, graph)]
        converted = make_programmatic(drv, graph, targets_of(graph, names)) if targets_of else 0
        exe = _check(drv.cuGraphInstantiate(graph, 0), "cuGraphInstantiate")
        _check(drv.cuGraphDestroy(graph), "cuGraphDestroy")
        return exe, converted, names

    def launch(self, name: str, grid: int, args: list, dependent: bool = False) -> None:
        self.plat.dependent_launch = dependent
        self.plat.launch(self.fn[name], (grid, 1, 1), (256, 1, 1), 0, self.stream, args)
        self.plat.dependent_launch = False

    def run(self, exe) -> None:
        _check(self.drv.cuGraphLaunch(exe, self.plat._stream(self.stream)), "cuGraphLaunch")
        self.plat.synchronize(self.stream)


def _nodes_where(keep):
    def pick(graph, names):
        nodes = kernel_nodes(PROBE.drv, graph)
        return {int(n) for n, nm in zip(nodes, names, strict=True) if keep(nm)}

    return pick


def not_named(prefixes: tuple[str, ...]):
    """targets_of: the kernel nodes whose function name starts with none of ``prefixes``."""
    return _nodes_where(lambda nm: not nm.startswith(prefixes))


def named(prefixes: tuple[str, ...]):
    """targets_of: the kernel nodes whose function name starts with one of ``prefixes``."""
    return _nodes_where(lambda nm: nm.startswith(prefixes))


PROBE: Probe


def main() -> int:
    global PROBE
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--delay-us", type=float, default=200.0)
    ap.add_argument("--pairs", type=int, default=60)
    ap.add_argument("--reps", type=int, default=50)
    args = ap.parse_args()
    try:
        PROBE = p = Probe()
    except BackendUnavailable as exc:
        print(f"gemm_pdl_probe: {exc}", file=sys.stderr)
        return 2
    plat = p.plat
    delay = ctypes.c_uint64(int(args.delay_us * 1000))
    ok = True

    # controls: a consumer of ours without / with the wait, behind the same programmatic edge
    n = 1 << 16
    a, c = plat.alloc(2 * n), plat.alloc(2 * n)
    for name, want_stale in (("consumer_nowait", True), ("consumer_wait", False)):
        def body(name=name):
            plat.memset(a, 0, 2 * n, p.stream)
            plat.memset(c, 0, 2 * n, p.stream)
            p.launch("producer", 4, [ctypes.c_void_p(a), ctypes.c_int(n), delay])
            p.launch(name, 64, [ctypes.c_void_p(a), ctypes.c_void_p(c), ctypes.c_int(n)])
        exe, conv, names = p.capture(body, named(("consumer",)))
        p.run(exe)
        out = np.zeros(n, np.uint16)
        plat.copy_d2h(out, c, 2 * n, p.stream)
        plat.synchronize(p.stream)
        stale = int((out != 0x3C00).sum())
        print(f"control {name}: {conv} programmatic edge(s), {stale} of {n} stale "
              f"({'as expected' if (stale > 0) == want_stale else 'UNEXPECTED'})")
        ok &= (stale > 0) == want_stale
    if not ok:
        print("the controls failed: the probe cannot tell waiting from not waiting here")
        return 1

    for m, nn, k in SHAPES:
        A, B, C = plat.alloc(2 * m * k), plat.alloc(2 * k * nn), plat.alloc(2 * m * nn)
        ones = np.full(k * nn, 0x3C00, np.uint16)
        plat.copy_h2d(B, ones, 2 * k * nn, p.stream)
        plat.synchronize(p.stream)

        def body(m=m, nn=nn, k=k, A=A, B=B, C=C):
            plat.memset(A, 0, 2 * m * k, p.stream)
            plat.memset(C, 0, 2 * m * nn, p.stream)
            p.launch("producer", 4, [ctypes.c_void_p(A), ctypes.c_int(m * k), delay])
            plat.gemm(p.stream, m, nn, k, A, k, B, k, C, nn, dtype="fp16", trans_b=True)
        exe, conv, names = p.capture(body, not_named(("producer",)))
        p.run(exe)
        out = np.zeros(m * nn, np.uint16).view(np.float16)
        plat.copy_d2h(out, C, 2 * m * nn, p.stream)
        plat.synchronize(p.stream)
        right = int((out == np.float16(k)).sum())
        waited = right == m * nn
        gemm_names = [x for x in names if not x.startswith("producer")]
        print(f"GEMM m={m} n={nn} k={k}: kernels {gemm_names}, {conv} programmatic edge(s); "
              f"{right} of {m * nn} outputs right -> {'WAITS' if waited else 'DOES NOT WAIT'}")

    # what a GEMM costs in a chain: our kernel alone, the GEMM alone, the two alternating
    for m, nn, k in SHAPES[:5]:
        A, B, C = plat.alloc(2 * m * k), plat.alloc(2 * k * nn), plat.alloc(2 * m * nn)

        def chain(kinds, m=m, nn=nn, k=k, A=A, B=B, C=C):
            for _ in range(args.pairs):
                if "touch" in kinds:
                    p.launch("touch", 8, [ctypes.c_void_p(A), ctypes.c_int(m * k)], dependent=True)
                if "gemm" in kinds:
                    plat.gemm(p.stream, m, nn, k, A, k, B, k, C, nn, dtype="fp16", trans_b=True)

        line = []
        for kinds in (("touch",), ("gemm",), ("touch", "gemm")):
            exe, _, _ = p.capture(lambda kinds=kinds: chain(kinds), None)
            p.run(exe)
            ev0, ev1 = plat.create_event(timing=True), plat.create_event(timing=True)
            ms = []
            for _ in range(args.reps):
                ev0.record(p.stream)
                _check(p.drv.cuGraphLaunch(exe, plat._stream(p.stream)), "cuGraphLaunch")
                ev1.record(p.stream)
                plat.synchronize(p.stream)
                ms.append(ev0.elapsed_ms(ev1))
            line.append(f"{'+'.join(kinds)} {statistics.median(ms) * 1000 / args.pairs:.2f}")
        print(f"chain m={m} n={nn} k={k}, us a step: " + ", ".join(line))
    return 0


if __name__ == "__main__":
    sys.exit(main())
