"""``lc0py tune``: measure the flash-attention kernel's run-time parameters on this GPU and save the
winner, which the GPU backend then uses by itself (backend option ``tuned=off`` opts out).

Every parameter is a compile define of ``kernels/flash_attention.hip``, so a candidate costs one
NVRTC compile of that kernel (cached on disk) and nothing else: the network is uploaded once and
``GpuNetwork.set_flash_overrides`` swaps the kernel in place. Per candidate:

* end to end: ``--repeats`` runs of ``--batches`` backendbench batches (planes encoded, H2D,
  forward pass, D2H, as ``lc0py backendbench`` times them) per batch size; nps mean / median /
  max / stddev over the runs;
* the kernel alone: one layer's attention at the largest batch size (device events, median).

Candidates (``enumerate_configs``): threads per block 64/128/256 (= 16-row warps 2/4/8: each warp
owns 16 query rows, so this is also the rows per softmax step, 32/64/128), occupancy target
1/2/4/8 blocks/SM, K/V tiles 16/32/64 keys, pipeline stages 1/2/4, Q in registers on/off, and
1 or 2 heads per block, and the kernel itself: one-shot blocks (``flash=v1``) or persistent blocks
walking (position, head) pairs (``flash=v2``, ``persistent=1``; its own defaults, blocks per SM
1..8, 2/3 stages, 32-key tiles, pairs interleaved over the blocks or in contiguous ranges,
walked up or down: only the end-to-end measurement sees the L2 effect of ``descend``), and at
depth 16/32 the copies' chunks handed out row by row or a column of 8 rows at a time
(``copy_order``).
``--quick`` tries the default, the other kernel's default and 3 neighbours (~5), the full mode
each axis around the default, the threads x occupancy grid, the tile x stage pairs and the
persistent kernel's neighbourhood (>= 20).
Configurations that are redundant or cannot work for the head depth are filtered before
measuring (with the reason); ones that fail to compile or launch are skipped (counted, with the
reason). The winner is the highest score (geometric mean over batch sizes of the mean nps)
among candidates whose stddev is < 5 % of the mean at every batch size; none stable -> the
default stays and nothing is saved.

Examples::

    lc0py tune --preset t82 --quick                   # 24 heads x 32, ~5 candidates
    lc0py tune -w net.pb.gz --batch-sizes 64,256,1024 --json-out tune.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import cast

from lc0py.backends.gpu.tuning import FlashParams, default_params, save_tuned
from lc0py.errors import UsageError
from lc0py.tools.arguments import (
    JsonTarget,
    add_backend_arguments,
    add_json_arguments,
    add_weights_argument,
    json_target,
)
from lc0py.tools.progress import Reporter, progress
from lc0py.weights.network import Network
from lc0py.weights.residual import ResidualNetwork

STABLE_CV = 0.05  # a winner's stddev must be < 5 % of its mean nps (at every batch size)
SEQ = 64

# axis -> values the sweep may take (f16 = tensor-core kernel, f32 = SIMT kernel)
AXES_F16: dict[str, tuple[int, ...]] = {
    "warps": (2, 4, 8),  # threads per block 64 / 128 / 256; rows per block 32 / 64 / 128
    "min_blocks": (1, 2, 4, 8),
    "kv_tile": (16, 32, 64),
    "stages": (1, 2, 4),
    "q_regs": (0, 1),
    "heads_per_block": (1, 2),
    "persistent": (0, 1),
    "interleave": (0, 1),
    "descend": (0, 1),
    "copy_order": (0, 1),
}
#: the persistent kernel's own neighbourhood (full mode), around its default
PERSISTENT_AXES: dict[str, tuple[int, ...]] = {
    "interleave": (0, 1),
    "descend": (0, 1),
    "copy_order": (0, 1),
    "min_blocks": (1, 2, 3, 4, 8),
    "stages": (2, 3),
    "kv_tile": (32, 64),
}
AXES_F32: dict[str, tuple[int, ...]] = {
    "f32_threads": (32, 64, 128, 256),
    "min_blocks": (1, 2, 4, 8),
    "kv_tile": (16, 32, 64),
}


def label(p: FlashParams, fp16: bool = True) -> str:
    """Short name of a candidate, e.g. ``t128 mb4 kv64 s1 q1 h1``."""
    if fp16:
        name = f"t{32 * p.warps} mb{p.min_blocks} kv{p.kv_tile} s{p.stages} q{p.q_regs} h{p.heads_per_block}"
        return name + (" v2" if p.persistent else "") + (" c1" if p.copy_order else "")
    return f"t{p.f32_threads} mb{p.min_blocks} kv{p.kv_tile}"


def why_filtered(p: FlashParams, depth: int, fp16: bool, seq: int = SEQ) -> str | None:
    """Why candidate ``p`` is not worth measuring for head ``depth`` (``None``: measure it)."""
    if p.kv_tile > max(16, -(-seq // 16) * 16):
        return f"kv_tile {p.kv_tile} > sequence {seq}"
    if not fp16:
        if depth > 64 and p.f32_threads > 64:
            return f"f32: {p.f32_threads} rows x {depth}-float accumulators spill at depth {depth}"
        return None
    if p.q_regs and depth > 128:
        return f"Q in registers: {depth // 2} more registers per lane past depth 128 spill"
    if p.kv_tile * depth > 64 * 128:
        return f"kv_tile {p.kv_tile} x depth {depth}: S fragments + O accumulators exceed the registers"
    if p.copy_order and depth >= 64:
        return f"copy_order 1 at depth {depth}: the kernel keeps row order (already conflict-free)"
    if not p.persistent and (p.interleave, p.descend) != (FlashParams.interleave, FlashParams.descend):
        return "interleave / descend order the persistent kernel's pairs: no effect on the one-shot kernel"
    if p.persistent:  # a block walks many pairs: every stage count has work to prefetch
        if p.heads_per_block > 1:
            return "persistent blocks walk (position, head) pairs: heads_per_block has no effect"
        return None
    items = p.heads_per_block * -(-seq // p.kv_tile)
    if p.stages > 1 and items < 2:
        return "one work item per block: nothing for extra stages to prefetch"
    if p.stages > items:
        return f"{p.stages} stages for {items} work items per block"
    if p.heads_per_block > 1 and p.stages == 1:
        return "2 heads per block without prefetch (stages 1) only serialises them"
    return None


def enumerate_configs(
    default: FlashParams,
    depth: int,
    fp16: bool,
    quick: bool,
    seq: int = SEQ,
    other: FlashParams | None = None,
) -> tuple[list[FlashParams], list[tuple[FlashParams, str]]]:
    """``(candidates, filtered)``: the default first, then the sweep, without duplicates;
    ``filtered`` lists the generated configurations ``why_filtered`` rejected, with the reason.
    ``other``: the other f16 kernel's default (``flash=v1`` / ``v2``: ``tuning.default_params``
    with ``persistent`` flipped), measured second, with (full mode) its own neighbourhood."""
    axes = AXES_F16 if fp16 else AXES_F32
    wanted: list[FlashParams] = [default]
    if fp16 and other is not None:
        wanted.append(other)
    if quick:
        if fp16:
            wanted += [
                # the persistent kernel's pair order, or the one-shot kernel's 32-row blocks
                replace(default, interleave=1 - default.interleave)
                if default.persistent
                else replace(default, warps=2),
                replace(default, min_blocks=min(8, default.min_blocks * 2)),
                replace(default, min_blocks=max(1, default.min_blocks // 2)),
                replace(default, q_regs=1 - default.q_regs),
                replace(default, kv_tile=32, stages=2),
            ]
        else:
            wanted += [replace(default, f32_threads=t) for t in (32, 128)]
            wanted += [replace(default, min_blocks=2 * default.min_blocks), replace(default, kv_tile=32)]
    else:
        for axis, values in axes.items():  # one axis at a time around the default
            wanted += [replace(default, **{axis: v}) for v in values]
        t_axis = "warps" if fp16 else "f32_threads"
        for t in axes[t_axis]:  # threads x occupancy
            wanted += [replace(default, **{t_axis: t, "min_blocks": mb}) for mb in axes["min_blocks"]]
        if fp16:  # tiles smaller than the sequence, with prefetch; two heads per block
            wanted += [replace(default, kv_tile=kv, stages=s) for kv, s in ((16, 2), (16, 4), (32, 2))]
            wanted += [replace(default, heads_per_block=2, stages=2)]
            persistent = default if default.persistent else other
            if persistent is not None and persistent.persistent:
                for axis, values in PERSISTENT_AXES.items():
                    wanted += [replace(persistent, **{axis: v}) for v in values]
    out: list[FlashParams] = []
    filtered: list[tuple[FlashParams, str]] = []
    seen: set[FlashParams] = set()
    for p in wanted:
        if p in seen:
            continue
        seen.add(p)
        reason = why_filtered(p, depth, fp16, seq) if p != default else None
        if reason is None:
            out.append(p)
        else:
            filtered.append((p, reason))
    if quick:
        out = out[:5]
    return out, filtered


def overrides_of(p: FlashParams, fp16: bool) -> dict[str, int]:
    """The ``FlashParams`` fields the kernel of this dtype reads (what is saved and applied)."""
    names = AXES_F16 if fp16 else AXES_F32
    return {k: v for k, v in asdict(p).items() if k in names}


# ---- measurements and the choice -------------------------------------------------------------
@dataclass(frozen=True)
class SizeStats:
    """End-to-end nps of one batch size over the repeated runs."""

    size: int
    mean: float
    median: float
    max: float
    stddev: float

    @property
    def cv(self) -> float:
        return self.stddev / self.mean if self.mean > 0 else math.inf

    @classmethod
    def of(cls, size: int, runs: Sequence[float]) -> SizeStats:
        if not runs:
            raise ValueError("no runs")
        sd = statistics.stdev(runs) if len(runs) > 1 else 0.0
        return cls(size, statistics.fmean(runs), statistics.median(runs), max(runs), sd)


@dataclass
class Result:
    """One candidate: its parameters and either measurements or the reason it was skipped."""

    params: FlashParams
    sizes: list[SizeStats] = field(default_factory=list)
    kernel_ms: float | None = None
    skipped: str | None = None

    @property
    def stable(self) -> bool:
        return self.skipped is None and bool(self.sizes) and all(s.cv < STABLE_CV for s in self.sizes)

    @property
    def score(self) -> float:
        """Geometric mean over batch sizes of the mean nps (0 if skipped)."""
        if self.skipped is not None or not self.sizes:
            return 0.0
        return math.exp(statistics.fmean(math.log(max(s.mean, 1e-9)) for s in self.sizes))


@dataclass(frozen=True)
class Measurement:
    """What a measure function returns: nps of each run per batch size, and the kernel's ms."""

    runs: dict[int, list[float]]
    kernel_ms: float | None


class SkipConfig(Exception):  # noqa: N818 -- a control-flow signal, not an error
    """Raised by a measure function: this candidate cannot run (compile/launch failure, ...)."""


def sweep(
    candidates: Sequence[FlashParams],
    measure: Callable[[FlashParams], Measurement],
    progress: Callable[[int, int, FlashParams, Result | None], None] | None = None,
) -> list[Result]:
    """Measure every candidate; a ``SkipConfig`` from ``measure`` marks it skipped with its text."""
    results = []
    for i, p in enumerate(candidates):
        if progress is not None:
            progress(i, len(candidates), p, None)
        try:
            m = measure(p)
            res = Result(p, [SizeStats.of(n, r) for n, r in sorted(m.runs.items())], m.kernel_ms)
        except SkipConfig as exc:
            res = Result(p, skipped=str(exc) or type(exc).__name__)
        results.append(res)
        if progress is not None:
            progress(i + 1, len(candidates), p, res)
    return results


def pick_winner(results: Sequence[Result]) -> Result | None:
    """The stable result with the highest score (``None`` if no result is stable)."""
    stable = [r for r in results if r.stable]
    return max(stable, key=lambda r: r.score) if stable else None


# ---- the command --------------------------------------------------------------------------------
def add_arguments(parser: argparse.ArgumentParser) -> None:
    src = parser.add_mutually_exclusive_group()
    add_weights_argument(src, note="default: --preset t82")
    src.add_argument(
        "--preset", metavar="NAME", help="random net of this preset (t82, t82-h12, t82-h8, t82-h6)"
    )
    add_backend_arguments(parser, default="cuda-fp16", note="a GPU backend",
                          opts_note="other backend options")
    parser.add_argument("--batch-sizes", default="256,1024", metavar="LIST", help="default 256,1024")
    parser.add_argument("--batches", type=int, default=10, metavar="N", help="batches per run (default 10)")
    parser.add_argument("--repeats", type=int, default=5, metavar="N", help="runs per batch size (default 5)")
    parser.add_argument("--quick", action="store_true", help="~5 candidates instead of the full sweep")
    add_json_arguments(parser, "every result and the winner", legacy_file=True)
    parser.add_argument("--no-save", action="store_true", help="do not save the winner for the backend")


def _report_to(bar: Reporter, fp16: bool) -> Callable[[int, int, FlashParams, Result | None], None]:
    """The sweep's progress on the shared reporter: a step per candidate, the candidate being
    measured and the last one's result after the bar (every result is in the table at the end)."""

    def show(done: int, total: int, p: FlashParams, res: Result | None) -> None:
        if res is None:
            bar.set_postfix(measuring=label(p, fp16))
            return
        bar.update(1)
        bar.set_postfix(last=f"{label(p, fp16)}: "
                        + ("skipped" if res.skipped else f"{res.score:,.0f} nps"))

    return show


def table(results: Sequence[Result], default: FlashParams, winner: Result | None, fp16: bool = True) -> str:
    """The results as a Markdown table (best first; the default and the winner marked)."""
    sizes = sorted({s.size for r in results for s in r.sizes})
    head = "| config | " + " | ".join(f"nps@{n} mean ± sd (max)" for n in sizes) + " | score | kernel ms | |"
    lines = [head, "|" + "---|" * (len(sizes) + 4)]
    base = next((r.score for r in results if r.params == default and not r.skipped), 0.0)
    for r in sorted(results, key=lambda r: -r.score):
        mark = " ".join(m for m, c in (("winner", r is winner), ("default", r.params == default)) if c)
        if r.skipped:
            lines.append(
                f"| {label(r.params, fp16)} | "
                + " | ".join("" for _ in sizes)
                + f" | skipped | | {r.skipped} |"
            )
            continue
        cells = [f"{s.mean:,.0f} ± {s.stddev:,.0f} ({s.max:,.0f})" for s in r.sizes]
        rel = f" ({r.score / base - 1:+.1%})" if base else ""
        flag = "" if r.stable else " unstable"
        km = f"{r.kernel_ms:.4f}" if r.kernel_ms is not None else ""
        lines.append(
            f"| {label(r.params, fp16)} | "
            + " | ".join(cells)
            + f" | {r.score:,.0f}{rel} | {km} | {mark}{flag} |"
        )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """``--json``: the JSON document is the only thing on stdout (the progress text goes to stderr)."""
    target = json_target(args, "tune")  # keeps the real stdout for the JSON
    with contextlib.redirect_stdout(sys.stderr) if target.stdout else contextlib.nullcontext():
        return _run(args, target)


def _run(args: argparse.Namespace, target: JsonTarget) -> int:
    from lc0py.backends.gpu.backend import GpuBackend
    from lc0py.backends.gpu.kernels import AttentionKernel
    from lc0py.backends.registry import create_backend
    from lc0py.chess import PositionHistory
    from lc0py.tools.backendbench import parse_sizes, run_batch

    sizes = parse_sizes(args.batch_sizes)
    if not 1 <= args.batches <= 100000 or not 2 <= args.repeats <= 1000:
        raise UsageError("--batches must be >= 1 and --repeats >= 2 (a stddev needs two runs)")
    from lc0py.backends.registry import check_name

    check_name(args.backend)  # a typo costs nothing: checked before the net is built
    loaded = _load(args)
    if not loaded.attention_layers()[0]:  # a residual body: refused before any device work
        raise UsageError(f"--weights {args.weights}: a residual (convolutional) net has no attention "
                         "kernels to tune")
    network = cast(Network, loaded)  # an attention body: checked just above
    opts = ",".join(x for x in (args.backend_opts, f"max_batch={max(sizes)}", "tuned=off") if x)
    backend = create_backend(args.backend, network, opts)
    if not isinstance(backend, GpuBackend):
        backend.close()
        raise UsageError(f"--backend {args.backend}: not a GPU backend (tune needs cuda, cuda-fp16, rocm...)")
    try:
        gpu = backend.gpu
        fp16 = gpu.fp16
        if not gpu.flash_choice.is_flash or gpu.flash_choice.params is None:
            raise UsageError(f"flash attention is not available here: {gpu.flash_choice.reason}")
        default = gpu.flash_choice.params
        other = None
        if fp16:  # the other kernel (flash=v1 / v2) with its own defaults
            other, _ = default_params(
                network.depth, backend.platform.info.arch, SEQ, persistent=1 - default.persistent
            )
        candidates, filtered = enumerate_configs(default, network.depth, fp16, args.quick, other=other)
        history = PositionHistory.from_fen(None)
        fmt = backend.info.input_format
        key = GpuBackend.tune_key(backend.platform.info.name, backend.platform.info.arch, network, fp16)
        want = (
            (AttentionKernel.FLASH_MMA, AttentionKernel.FLASH_MMA_PERSISTENT)
            if fp16
            else (AttentionKernel.FLASH_SIMT,)
        )

        def measure(p: FlashParams) -> Measurement:
            choice = gpu.set_flash_overrides(overrides_of(p, fp16))
            if choice.kernel not in want:
                raise SkipConfig(choice.reason)
            runs: dict[int, list[float]] = {}
            try:
                for _ in range(2):  # warm-up: graph capture for the largest size
                    run_batch(backend, history, fmt, max(sizes))
                for n in sizes:
                    run_batch(backend, history, fmt, n)
                    runs[n] = []
                    for _ in range(args.repeats):
                        t0 = time.perf_counter()
                        for _ in range(args.batches):
                            run_batch(backend, history, fmt, n)
                        runs[n].append(n * args.batches / (time.perf_counter() - t0))
                kernel = gpu.time_attention(max(sizes), True, iters=30)
            except Exception as exc:  # a launch failure of this kernel (resources): skip it
                raise SkipConfig(f"launch failed: {exc}") from exc
            return Measurement(runs, kernel)

        print(
            f"tune: {backend.platform.info.name} ({key.arch}), {key.heads} heads x {key.depth}, "
            f"{key.dtype}, batch sizes {','.join(map(str, sizes))}, {args.repeats} runs x "
            f"{args.batches} batches; {len(candidates)} candidates "
            f"({'quick' if args.quick else 'full'}), {len(filtered)} filtered",
            file=sys.stderr,
        )
        with progress(len(candidates), "tune", unit="config") as bar:
            results = sweep(candidates, measure, _report_to(bar, fp16))
        winner = pick_winner(results)
        # leave the network on the winner (or the default) in case the caller keeps using it
        gpu.set_flash_overrides(overrides_of(winner.params if winner else default, fp16))
    finally:
        backend.close()

    skipped = [r for r in results if r.skipped]
    print(table(results, default, winner, fp16))
    print()
    for p, why in filtered:
        print(f"filtered: {label(p, fp16)}: {why}")
    print(
        f"measured {len(results) - len(skipped)}, skipped {len(skipped)} (compile/launch), "
        f"filtered {len(filtered)}"
    )
    base = next((r for r in results if r.params == default), None)
    saved: Path | None = None
    if winner is None:
        print("no candidate had stddev < 5 % of its mean: keeping the defaults, nothing saved")
    else:
        gain = winner.score / base.score - 1 if base and base.score else float("nan")
        print(
            f"winner: {label(winner.params, fp16)} ({winner.score:,.0f} nps, {gain:+.1%} vs default "
            f"{label(default, fp16)})"
        )
        if not args.no_save:
            saved = save_tuned(
                key,
                winner.params,
                {
                    "score_nps": winner.score,
                    "default_score_nps": base.score if base else None,
                    "batch_sizes": sizes,
                    "mode": "quick" if args.quick else "full",
                    "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                },
            )
            print(f"saved to {saved} (the backend uses it unless tuned=off)")
    if target.stdout or target.file:
        doc = {
            "key": asdict(key),
            "mode": "quick" if args.quick else "full",
            "batch_sizes": sizes,
            "repeats": args.repeats,
            "batches": args.batches,
            "default": overrides_of(default, fp16),
            "winner": overrides_of(winner.params, fp16) if winner else None,
            "saved": str(saved) if saved else None,
            "results": [
                {
                    "params": overrides_of(r.params, fp16),
                    "label": label(r.params, fp16),
                    "skipped": r.skipped,
                    "stable": r.stable,
                    "score": r.score,
                    "kernel_ms": r.kernel_ms,
                    "sizes": [asdict(s) for s in r.sizes],
                }
                for r in results
            ],
            "filtered": [{"params": overrides_of(p, fp16), "reason": why} for p, why in filtered],
        }
        target.write(json.dumps(doc, indent=1))
    return 0


def _load(args: argparse.Namespace) -> Network | ResidualNetwork:
    if args.weights:
        from lc0py.tools.weights_choice import resolve_weights
        from lc0py.weights import load_network

        path = resolve_weights(args.weights, "tune", speed_tool=False)  # <random>, <autodiscover>
        assert path is not None  # no backend that runs without a net is named here
        return load_network(path)  # names a missing file, a directory or a FIFO as such
    from lc0py.weights.presets import random_network

    return random_network(args.preset or "t82", 0)
