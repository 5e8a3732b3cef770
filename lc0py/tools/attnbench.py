"""``lc0py attnbench``: the general attention operator (``lc0py.attention``) timed on its three
implementations -- numpy on the CPU, the naive GPU path (GEMM, softmax, GEMM; scores
materialised) and the flash kernel -- over sequence lengths, depths, heads, batch sizes and
causal on/off.

Per shape and implementation: mean and P50 / P95 / P99 milliseconds over ``--iters`` calls
(GPU: device events around each call, inputs already on the device; CPU: wall clock), the
speedups over flash, and the peak extra memory of one call (GPU: the operator's own allocations
beyond the inputs -- output and, for naive, the scores; flash must stay O(L): only the output;
CPU: numpy's peak through tracemalloc), and flash's relative error against naive. Inputs are
random fp16 in the ``bhsd`` layout (the interleaved layout is the same kernel with other strides). Output: a
Markdown table on stdout (``--json``: every row as JSON instead; ``--json-out FILE``: also to a
file), ``--plot FILE.png`` (time vs sequence length; needs matplotlib, skipped with a note if it
is not installed). Without a GPU the default ``--impls`` runs the CPU rows it can (L up to
``--cpu-max-seq``) and says on stderr what it skipped; an explicit ``--impls naive``/``flash``
without a GPU is an error.

The CPU runs only up to ``--cpu-max-seq`` (its time grows as L^2 and it is the reference, not a
contender); the naive path is skipped where its scores would exceed ``--naive-max-gb``.

    lc0py attnbench                                  # L 64..8192, d 32/64/128, 16 heads, batch 1
    lc0py attnbench --seq 1024,4096 --heads 4,32 --batch 1,64 --causal on --json-out a.json
"""

from __future__ import annotations

import argparse
import io
import itertools
import json
import statistics
import sys
import time
import tracemalloc
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lc0py.backends.accuracy import relative_error
from lc0py.errors import UsageError
from lc0py.storage.atomic import write_atomically
from lc0py.tools.arguments import add_json_arguments, int_list, json_target
from lc0py.tools.progress import progress

IMPLS = ("cpu", "naive", "flash")


@dataclass(frozen=True)
class BenchShape:
    batch: int
    heads: int
    kv_heads: int
    seq: int
    depth: int
    causal: bool

    def label(self) -> str:
        kv = f"/{self.kv_heads}" if self.kv_heads != self.heads else ""
        return f"B{self.batch} H{self.heads}{kv} L{self.seq} d{self.depth}{' causal' if self.causal else ''}"


@dataclass
class Timing:
    """One implementation on one shape (``skipped``: why it did not run)."""

    impl: str
    ms: list[float] = field(default_factory=list)
    peak_bytes: int | None = None
    skipped: str | None = None

    def summary(self) -> dict[str, Any]:
        if self.skipped is not None or not self.ms:
            return {"impl": self.impl, "skipped": self.skipped}
        return {
            "impl": self.impl,
            "mean_ms": statistics.fmean(self.ms),
            "p50_ms": percentile(self.ms, 50),
            "p95_ms": percentile(self.ms, 95),
            "p99_ms": percentile(self.ms, 99),
            "peak_bytes": self.peak_bytes,
            "samples": len(self.ms),
        }


def percentile(xs: list[float], p: float) -> float:
    """Linear-interpolation percentile (numpy's default)."""
    return float(np.percentile(np.asarray(xs, np.float64), p))


def causal_list(text: str) -> list[bool]:
    choices = {"off": [False], "on": [True], "both": [False, True]}
    if text not in choices:
        raise UsageError(f"--causal '{text}': want off, on or both")
    return choices[text]


def plan(args: argparse.Namespace) -> tuple[list[BenchShape], list[str]]:
    """Every shape of the sweep (cross product of the lists) and the implementations to run."""
    seqs = int_list("--seq", args.seq, 1, 65536)
    depths = int_list("--depths", args.depths, 16, 256)
    for d in depths:
        if d % 16:
            raise UsageError(f"--depths: {d} is not a multiple of 16 (the GPU kernels' tile)")
    heads = int_list("--heads", args.heads, 1, 256)
    batches = int_list("--batch", args.batch, 1, 4096)
    group = int_list("--group", str(args.group), 1, 64)[0]
    for h in heads:
        if h % group:
            raise UsageError(f"--group {group}: {h} heads are not a multiple of it")
    impls = [s.strip() for s in (args.impls or ",".join(IMPLS)).split(",") if s.strip()]
    bad = [s for s in impls if s not in IMPLS]
    if bad or not impls:
        raise UsageError(f"--impls: {','.join(bad) or 'none'}: unknown (available: {', '.join(IMPLS)})")
    if args.iters < 1 or args.warmup < 0:
        raise UsageError("--iters must be >= 1 and --warmup >= 0")
    shapes = [
        BenchShape(b, h, h // group, n, d, c)
        for d, c, h, b, n in itertools.product(depths, causal_list(args.causal), heads, batches, seqs)
    ]
    return shapes, impls


def skip_reason(impl: str, s: BenchShape, args: argparse.Namespace) -> str | None:
    """Why ``impl`` does not run on ``s`` (``None``: it runs)."""
    if impl == "cpu" and s.seq > args.cpu_max_seq:
        return f"L > --cpu-max-seq {args.cpu_max_seq}"
    if impl == "naive":
        gb = s.batch * s.heads * s.seq * s.seq * 2 / 1e9
        if gb > args.naive_max_gb:
            return f"scores {gb:.1f} GB > --naive-max-gb {args.naive_max_gb:g}"
    return None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seq", default="64,256,1024,2048,4096,8192", help="sequence lengths (q = k)")
    parser.add_argument("--depths", default="32,64,128", help="head depths (multiples of 16, <= 256)")
    parser.add_argument("--heads", default="16", help="query heads, e.g. 4,8,16,32")
    parser.add_argument("--batch", default="1", help="batch sizes, e.g. 1,8,64")
    parser.add_argument("--group", type=int, default=1, help="query heads per K/V head (GQA; default 1)")
    parser.add_argument("--causal", default="both", help="off, on or both (default)")
    parser.add_argument("--impls", default=None,
                        help="subset of cpu,naive,flash (default: all; cpu alone without a GPU)")
    parser.add_argument("--iters", type=int, default=20, help="timed calls per shape (default 20)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed calls first (default 3)")
    parser.add_argument("--cpu-max-seq", type=int, default=1024, help="longest L the CPU runs (default 1024)")
    parser.add_argument("--naive-max-gb", type=float, default=16.0, help="skip naive above this scores size")
    add_json_arguments(parser, "every row", legacy_file=True)
    parser.add_argument("--plot", metavar="FILE.png", help="time vs sequence length (needs matplotlib)")


def _bench_gpu(
    eng: Any, impl: str, s: BenchShape, dev: tuple[Any, ...] | None, iters: int, warmup: int
) -> tuple[Timing, np.ndarray]:
    from lc0py.attention import attention

    assert dev is not None  # the GPU rows run only with an engine and device copies
    q, k, v = dev
    eng.release_workspace()
    eng.reset_peak()
    base = eng.current_bytes
    out = eng.empty(q.shape)
    p = eng.platform
    start, end = p.create_event(timing=True), p.create_event(timing=True)
    try:
        ms = []
        for i in range(warmup + iters):
            start.record(eng.stream)
            attention(q, k, v, layout="bhsd", causal=s.causal, impl=impl, engine=eng, out=out)
            end.record(eng.stream)
            end.synchronize()
            if i >= warmup:
                ms.append(start.elapsed_ms(end))
        peak = eng.peak_bytes - base
        result = out.numpy()
    finally:
        p.destroy_event(start)
        p.destroy_event(end)
        out.free()
        eng.release_workspace()
    return Timing(impl, ms, peak), result


def _bench_cpu(s: BenchShape, host: tuple[np.ndarray, ...], iters: int) -> Timing:
    from lc0py.attention.reference import attention_numpy

    q, k, v = (x.astype(np.float32) for x in host)
    ms = []
    tracemalloc.start()
    try:
        for _ in range(max(1, min(iters, 5))):  # the CPU is the reference: a few calls suffice
            t0 = time.perf_counter()
            attention_numpy(q, k, v, layout="bhsd", causal=s.causal)
            ms.append(1e3 * (time.perf_counter() - t0))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return Timing("cpu", ms, peak)


def _gpu_engine(impls: list[str], explicit: bool) -> tuple[Any, list[str]]:
    """The GPU engine when a GPU implementation is wanted, and the implementations that can run.

    Without a GPU, the default ``--impls`` falls back to the CPU rows (said on stderr); an explicit
    request for a GPU implementation is a one-line error.
    """
    if all(i == "cpu" for i in impls):
        return None, impls
    from lc0py.attention.gpu import GpuAttention
    from lc0py.errors import Lc0pyError

    try:
        eng = GpuAttention()
    except Lc0pyError as exc:
        if explicit:
            raise
        gpu = [i for i in impls if i != "cpu"]
        print(f"attnbench: no GPU ({str(exc).split(' (')[0]}): running cpu only; skipped {', '.join(gpu)}",
              file=sys.stderr, flush=True)
        return None, [i for i in impls if i == "cpu"]
    print(
        f"attnbench: {eng.platform.info.name} ({eng.platform.info.arch}); fp16 storage, fp32 accumulate",
        file=sys.stderr,
    )
    return eng, impls


def run(args: argparse.Namespace) -> int:
    shapes, impls = plan(args)
    target = json_target(args, "attnbench")
    eng, impls = _gpu_engine(impls, explicit=args.impls is not None)
    if impls == ["cpu"]:
        runnable = [s for s in shapes if skip_reason("cpu", s, args) is None]
        if len(runnable) < len(shapes):
            print(f"attnbench: cpu only: skipped {len(shapes) - len(runnable)} of {len(shapes)} shapes "
                  f"with L > --cpu-max-seq {args.cpu_max_seq}", file=sys.stderr, flush=True)
        shapes = runnable
    rows: list[dict[str, Any]] = []
    with progress(len(shapes), "attnbench", unit="shape") as bar:
        try:
            for n, s in enumerate(shapes):
                rng = np.random.default_rng(n)
                host = tuple(
                    rng.standard_normal((s.batch, h, s.seq, s.depth)).astype(np.float16)
                    for h in (s.heads, s.kv_heads, s.kv_heads)
                )
                timings: dict[str, Timing] = {}
                outs: dict[str, np.ndarray] = {}
                dev = tuple(eng.to_device(x) for x in host) if eng is not None else None
                try:
                    for impl in impls:
                        why = skip_reason(impl, s, args)
                        if why is not None:
                            timings[impl] = Timing(impl, skipped=why)
                        elif impl == "cpu":
                            timings[impl] = _bench_cpu(s, host, args.iters)
                        else:
                            try:
                                timings[impl], outs[impl] = _bench_gpu(eng, impl, s, dev, args.iters,
                                                                       args.warmup)
                            except Exception as exc:  # e.g. out of memory: a row says so, the sweep goes on
                                timings[impl] = Timing(impl, skipped=f"{type(exc).__name__}: {exc}"[:120])
                finally:
                    for x in dev or ():
                        x.free()
                row: dict[str, Any] = {**asdict(s), "results": {i: t.summary() for i, t in timings.items()}}
                if "flash" in outs and "naive" in outs:
                    row["flash_vs_naive_rel_err"] = relative_error(outs["flash"], outs["naive"])
                rows.append(row)
                bar.update(1)
                bar.set_postfix(last=f"{s.label()}: " + ", ".join(
                    f"{i} {r['mean_ms']:.3f} ms" if "mean_ms" in r else f"{i} skipped"
                    for i, r in row["results"].items()))
        finally:
            if eng is not None:
                eng.close()
    if not target.stdout:
        print(table(rows))
    if target.stdout or target.file:
        target.write(json.dumps({"rows": rows}, indent=1))
    if args.plot:
        print(plot(rows, args.plot), file=sys.stderr)
    return 0


def _mb(x: int | None) -> str:
    return "" if x is None else f"{x / 2**20:,.1f}"


def table(rows: list[dict[str, Any]]) -> str:
    """Markdown: one line per shape; per implementation mean / P50 / P95 / P99 ms and peak MB."""
    impls = [i for i in IMPLS if any(i in r["results"] for r in rows)]
    head = ["shape"]
    for i in impls:
        head += [f"{i} mean ms", f"{i} p50/p95/p99", f"{i} peak MB"]
    head += ["naive/flash", "cpu/flash", "flash err"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        s = BenchShape(r["batch"], r["heads"], r["kv_heads"], r["seq"], r["depth"], r["causal"])
        cells = [s.label()]
        res = r["results"]
        for i in impls:
            t = res.get(i, {})
            if "mean_ms" in t:
                cells += [
                    f"{t['mean_ms']:.4g}",
                    f"{t['p50_ms']:.4g}/{t['p95_ms']:.4g}/{t['p99_ms']:.4g}",
                    _mb(t["peak_bytes"]),
                ]
            else:
                cells += [f"skipped ({t.get('skipped', '')})", "", ""]
        f = res.get("flash", {}).get("mean_ms")
        for other in ("naive", "cpu"):
            o = res.get(other, {}).get("mean_ms")
            cells.append(f"{o / f:.1f}x" if o and f else "")
        err = r.get("flash_vs_naive_rel_err")
        cells.append("" if err is None else f"{err:.1e}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(rows: list[dict[str, Any]], path: str) -> str:
    """Time vs sequence length (log-log), one line per (impl, depth, causal) at the first heads /
    batch of the sweep; returns what happened, as one line."""
    from lc0py.tools.plotting import INSTALL_HINT, pyplot

    try:
        plt = pyplot()
    except UsageError:
        return f"attnbench: matplotlib is not installed: no plot ({INSTALL_HINT})"
    if not rows:
        return "attnbench: nothing to plot"
    h0, b0 = rows[0]["heads"], rows[0]["batch"]
    fig, ax = plt.subplots(figsize=(8, 5))
    series: dict[tuple[str, int, bool], list[tuple[int, float]]] = {}
    for r in rows:
        if (r["heads"], r["batch"]) != (h0, b0):
            continue
        for impl, t in r["results"].items():
            if "mean_ms" in t:
                series.setdefault((impl, r["depth"], r["causal"]), []).append((r["seq"], t["mean_ms"]))
    style = {"cpu": ":", "naive": "--", "flash": "-"}  # line style = implementation
    keys = sorted({(d, c) for _, d, c in series})
    colors = {key: f"C{i % 10}" for i, key in enumerate(keys)}  # colour = (depth, causal)
    for (impl, d, c), pts in sorted(series.items()):
        pts.sort()
        ax.plot(
            [p[0] for p in pts],
            [p[1] for p in pts],
            style[impl],
            color=colors[(d, c)],
            marker="o",
            ms=3,
            label=f"{impl} d{d}{' causal' if c else ''}",
        )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("sequence length")
    ax.set_ylabel("ms per call (mean)")
    ax.set_title(f"lc0py attention: {h0} heads, batch {b0}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    image = io.BytesIO()
    fig.savefig(image, dpi=120, format=Path(path).suffix.lstrip(".") or "png")
    plt.close(fig)
    write_atomically(path, image.getvalue(), what=f"--plot {path}")
    return f"attnbench: plot written to {path}"
