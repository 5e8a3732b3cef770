"""Recording platforms for the GPU layers' host-side tests, and a replay of a forward pass's
cross-stream order.

``CallPlatform`` keeps every GEMM (shape, pointers, ``beta``, ``sms``, stream) and launch (kernel,
stream, pointer arguments); ``StreamPlatform`` adds the event records and waits in order, and
``unordered_conflicts`` replays them with vector clocks: two operations on different streams that
touch the same activation bytes, one writing, with no chain of stream order and event waits between
them, are a race on a device. Used by test_fusions.py (the smolgen branch, the row-halves pipeline,
the value-head branch) and test_layers.py's residual SE branch.
"""

from __future__ import annotations

import ctypes
from typing import Any

from tests.backends.gpu.test_layers import PointerPlatform


class CallPlatform(PointerPlatform):
    """``PointerPlatform`` that also keeps each GEMM's shape, pointers, ``beta``, ``sms`` and stream,
    and each launch's kernel, stream and pointer arguments."""

    def __init__(self) -> None:
        super().__init__()
        self.gemms: list[dict[str, Any]] = []
        self.launches: list[tuple[int, int, list[int]]] = []

    def gemm(self, stream: int, m: int, n: int, k: int, a: int, *args: Any, **kw: Any) -> None:
        super().gemm(stream, m, n, k, a, *args, **kw)
        lda, b, ldb, c, ldc = args
        self.gemms.append(dict(stream=stream, m=m, n=n, k=k, a=a, b=b, c=c, ldc=ldc, **kw))

    def launch(self, fn: int, grid: Any, block: Any, smem: int, stream: int, args: Any) -> None:
        super().launch(fn, grid, block, smem, stream, args)
        ptrs = [a.value or 0 if isinstance(a, ctypes.c_void_p) else None for a in args]
        self.launches.append((fn, stream, ptrs))  # type: ignore[arg-type]


class StreamPlatform(CallPlatform):
    """``CallPlatform`` that also keeps event records and waits, in order with the operations."""

    def __init__(self) -> None:
        super().__init__()
        self.timeline: list[tuple[str, Any]] = []  # ("op", index into ops) / ("record"|"wait", ...)
        self.ops_seen: list[tuple[str, int, Any]] = []  # (kind, stream, record)

    def gemm(self, stream: int, m: int, n: int, k: int, a: int, *args: Any, **kw: Any) -> None:
        super().gemm(stream, m, n, k, a, *args, **kw)
        self.timeline.append(("op", len(self.ops_seen)))
        self.ops_seen.append(("gemm", stream, self.gemms[-1]))

    def launch(self, fn: int, grid: Any, block: Any, smem: int, stream: int, args: Any) -> None:
        super().launch(fn, grid, block, smem, stream, args)
        ints = [a.value for a in args if isinstance(a, ctypes.c_int)]
        self.timeline.append(("op", len(self.ops_seen)))
        self.ops_seen.append(("launch", stream, (fn, self.launches[-1][2], ints)))

    def event_record(self, event: int, stream: int) -> None:
        self.timeline.append(("record", (event, stream)))

    def stream_wait_event(self, stream: int, event: int) -> None:
        self.timeline.append(("wait", (stream, event)))


def accesses(gpu: Any, kind: str, rec: Any) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(reads, writes) of one operation as byte ranges of the activation buffers (weights are
    read-only and left out): exact for GEMMs, LayerNorms, bias + activation and column copies;
    ``smolgen_chain`` and ``compress_rows`` read their input and write their output, scratch and
    counters (``compress_rows_prenorm``: its two inputs, the FFN output and the skip); an other kernel
    reads and writes the whole of every buffer it is handed."""
    ops, elem = gpu.ops, gpu.ops.elem
    buf = gpu.runner.buf
    fields = sorted(p for p in vars(buf).values() if p)
    end = fields[0] + gpu.runner.buffer_bytes

    def field(ptr: int) -> tuple[int, int] | None:
        starts = [f for f in fields if f <= ptr]
        if not starts or ptr >= end:
            return None  # a weight
        i = fields.index(starts[-1])
        return (starts[-1], fields[i + 1] if i + 1 < len(fields) else end)

    def rows(ptr: int, count: int, ld: int, width: int) -> list[tuple[int, int]]:
        return [] if field(ptr) is None else [(ptr, ptr + ((count - 1) * ld + width) * elem)]

    if kind == "gemm":
        g = rec
        if g.get("batch", 1) > 1:  # strided batches: the whole buffers
            reads = [f for f in (field(g["a"]), field(g["b"])) if f]
            return reads, [f for f in (field(g["c"]),) if f]
        reads = rows(g["a"], g["m"], g["k"], g["k"]) if g["a"] != gpu.runner.buf.qkv else [field(g["a"])]
        reads += rows(g["b"], g["n"], g["k"], g["k"])
        writes = rows(g["c"], g["m"], g["ldc"], g["n"])
        if g.get("beta", 0.0):
            reads += writes
        return [r for r in reads if r], writes
    fn, ptrs, ints = rec
    lns = {handle: n for (n, _), (handle, _) in ops._ln.items()}
    if fn in lns:  # y, bias, skip, out, gamma, beta; rows
        n, count = lns[fn], ints[0]
        y, _, skip, out = ptrs[:4]
        return rows(y, count, n, n) + (rows(skip, count, n, n) if skip else []), rows(out, count, n, n)
    if fn == ops.k_bias_act:  # y, bias; rows, n
        y = rows(ptrs[0], ints[0], ints[1], ints[1])
        return y, y
    if fn == ops.k_copy_cols:  # src; ld, col0; dst; rows, n
        return [f for f in (field(ptrs[0]),) if f], rows(ptrs[3], ints[2], ints[3], ints[3])
    if fn in {handle for handle, _ in ops._smolgen_chain.values()}:  # x, 9 weights, out, scratch, sync
        written = [f for f in (field(p) for p in ptrs[10:13]) if f]
        return [f for f in (field(ptrs[0]),) if f] + written, written
    if fn in {handle for handle, _ in ops._compress_rows.values()}:  # x, 5 weights, out, scratch, counters
        written = [f for f in (field(p) for p in ptrs[6:9]) if f]
        return [f for f in (field(ptrs[0]),) if f] + written, written
    if fn in {handle for handle, _ in ops._compress_prenorm.values()}:  # y, skip, 3 + 5 weights, out, ...
        written = [f for f in (field(p) for p in ptrs[11:14]) if f]
        return [f for f in (field(p) for p in ptrs[:2]) if f] + written, written
    whole = [f for f in (field(p) for p in ptrs if p) if f]
    return whole, whole


def unordered_conflicts(gpu: Any, plat: StreamPlatform) -> list[str]:
    """Pairs of operations on different streams that touch the same bytes, one writing, with no
    chain of stream order and event waits between them (vector clocks over the recorded timeline)."""
    clocks: dict[int, dict[int, int]] = {}
    events: dict[int, dict[int, int]] = {}
    stamped = []
    for what, data in plat.timeline:
        if what == "record":
            event, stream = data
            events[event] = dict(clocks.setdefault(stream, {}))
        elif what == "wait":
            stream, event = data
            clock = clocks.setdefault(stream, {})
            for s, n in events.get(event, {}).items():
                clock[s] = max(clock.get(s, 0), n)
        else:
            kind, stream, rec = plat.ops_seen[data]
            clock = clocks.setdefault(stream, {})
            clock[stream] = clock.get(stream, 0) + 1
            stamped.append((data, stream, dict(clock), *accesses(gpu, kind, rec)))

    def before(a: Any, b: Any) -> bool:
        return a[2][a[1]] <= b[2].get(a[1], 0)

    def overlap(xs: list[tuple[int, int]], ys: list[tuple[int, int]]) -> bool:
        return any(x0 < y1 and y0 < x1 for x0, x1 in xs for y0, y1 in ys)

    bad = []
    for i, a in enumerate(stamped):
        for b in stamped[i + 1 :]:
            if a[1] == b[1] or before(a, b) or before(b, a):
                continue
            if overlap(a[4], b[3] + b[4]) or overlap(b[4], a[3]):
                bad.append(f"ops {a[0]} (stream {a[1]}) and {b[0]} (stream {b[1]})")
    return bad
