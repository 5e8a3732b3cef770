"""``lc0py backendbench``: network throughput per batch size, in lc0 master's CSV format.

Like lc0 (``src/tools/backendbench.cc``): one position (``--fen``, default the start position)
is evaluated ``size`` times per batch, ``--batches`` batches per size, sizes from
``--start-batch-size`` to ``--max-batch-size`` in steps of ``--batch-step`` (or the list
``--batch-sizes 1,8,64``). Each timed batch includes encoding the planes, building the batch,
the backend call and reading the outputs back (host <-> device traffic), as lc0 does. Warm-up:
2 batches of the largest size. Rows: see ``lc0py.tools.bench_stats``.

Batches in flight (lc0py only, ``--in-flight N``): lc0's backendbench waits for each batch before
sending the next, which is what a single backend gets here too (default 1). A multi-device backend
(``demux``, ``roundrobin``, ``multiplexing``) gets its own ``batches_in_flight`` by default (demux
2, the others 2 per child): with one batch at a time, N devices idle while the host reads one
batch's outputs and prepares the next, and roundrobin would use one device at a time. The times
are then those between consecutive completions. Compare a multi backend with one device measured
at the same ``--in-flight``.

CPU backends are slow on T82-sized nets (about 1-3 positions a second with numpy), so on a CPU
backend the parts of the plan no flag sets come from a small CPU plan (sizes 1, 4, 16, 3 batches
each, 1 warm-up batch of size 4: ~70 positions, well under a minute) instead of lc0's (sizes
1..256, 100 batches), and the plan is said on stderr. ``--batches 10`` alone keeps the CPU sizes;
``--batch-sizes 1,2`` alone keeps the CPU batch count. Whether a backend runs on the CPU comes from
``lc0py.backends.registry.is_cpu_backend``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from lc0py.chess.planes import PlanesBatch
from lc0py.errors import PositionError, UsageError
from lc0py.storage.reading import check_regular_file
from lc0py.tools.arguments import (
    JsonTarget,
    add_backend_arguments,
    add_json_arguments,
    add_weights_argument,
    int_list,
    int_value,
    json_target,
)
from lc0py.tools.bench_stats import HEADER, BatchStats, compute_stats, header_due
from lc0py.tools.positions import normalise_fen
from lc0py.tools.progress import Reporter, progress
from lc0py.tools.weights_choice import AUTODISCOVER, RANDOM, resolve_weights
from lc0py.weights.default_net import FILE_NAME as DEFAULT_NET_FILE

CPU_DEFAULT_SIZES = (1, 4, 16)
CPU_DEFAULT_BATCHES = 3
CPU_DEFAULT_WARMUP = 1
CPU_WARMUP_SIZE = 4
WARMUP_BATCHES = 2

@dataclass
class Plan:
    """What to run: batch sizes, batches per size, warm-up batches of ``warmup_size`` positions."""

    sizes: list[int]
    batches: int
    warmup: int
    warmup_size: int = 0  # 0: the largest size

    def describe(self) -> str:
        size = self.warmup_size or max(self.sizes)
        return (f"sizes {','.join(map(str, self.sizes))}, {self.batches} batches each, "
                f"{self.warmup} warm-up batch{'es' if self.warmup != 1 else ''} of {size}")


# flag -> (attribute, lc0's range)
INT_FLAGS = {
    "--batches": ("batches", 1, 999999999),
    "--start-batch-size": ("start_batch_size", 1, 1024),
    "--max-batch-size": ("max_batch_size", 1, 1024),
    "--batch-step": ("batch_step", 1, 256),
    "--in-flight": ("in_flight", 1, 64),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_weights_argument(parser, note="default <autodiscover>: the net lc0 would find, else <random>")
    add_backend_arguments(parser, note="or several: cuda,cuda-fp16")
    parser.add_argument("--batches", default=None, metavar="N", help="batches per size (default 100)")
    parser.add_argument("--start-batch-size", default=None, metavar="N", help="first batch size (default 1)")
    parser.add_argument("--max-batch-size", default=None, metavar="N", help="last batch size (default 256)")
    parser.add_argument("--batch-step", default=None, metavar="N", help="batch size step (default 1)")
    parser.add_argument("--batch-sizes", default=None, metavar="LIST",
                        help="explicit sizes, e.g. 1,8,64 (instead of start/max/step)")
    parser.add_argument("--fen", default=None, help="position to evaluate (default: start position)")
    parser.add_argument("--in-flight", default=None, metavar="N",
                        help="batches kept in flight (default 1; demux 2, roundrobin/multiplexing 2 a child)")
    parser.add_argument("--header-only-once", action="store_true", help="print the CSV header only once")
    parser.add_argument("--plot", metavar="FILE.png",
                        help="draw nps against batch size, one line per backend (needs matplotlib)")
    add_json_arguments(parser, "one object per batch size (JSON lines) instead of CSV")


#: ``--batch-sizes`` may go past lc0's 1024 (``--max-batch-size``): a ``demux`` backend over N
#: GPUs is measured at N x 1024
MAX_LISTED_SIZE = 16384


def parse_sizes(text: str) -> list[int]:
    """``"1,8,64"`` -> ``[1, 8, 64]`` (each 1..``MAX_LISTED_SIZE``)."""
    return int_list("--batch-sizes", text, 1, MAX_LISTED_SIZE)


def make_plan(args: argparse.Namespace, is_cpu: bool) -> tuple[Plan, bool]:
    """The plan from the flags; ``(plan, used_cpu_defaults)``: on a CPU backend every part no
    flag sets (the sizes, the batch count) comes from the small CPU plan."""
    size_flags = ("start_batch_size", "max_batch_size", "batch_step")
    if args.batch_sizes is not None:
        if any(getattr(args, f) is not None for f in size_flags):
            raise UsageError("--batch-sizes cannot be combined with --start/--max-batch-size/--batch-step")
        sizes = parse_sizes(args.batch_sizes)
    elif is_cpu and all(getattr(args, f) is None for f in size_flags):
        sizes = list(CPU_DEFAULT_SIZES)
    else:
        start = args.start_batch_size if args.start_batch_size is not None else 1
        stop = args.max_batch_size if args.max_batch_size is not None else 256
        step = args.batch_step if args.batch_step is not None else 1
        if start > stop:
            raise UsageError(f"--start-batch-size {start} is larger than --max-batch-size {stop}")
        sizes = list(range(start, stop + 1, step))
    if is_cpu:
        sizes_given = args.batch_sizes is not None or any(getattr(args, f) is not None for f in size_flags)
        cpu_defaults = not sizes_given or args.batches is None
        batches = args.batches if args.batches is not None else CPU_DEFAULT_BATCHES
        warmup_size = min(CPU_WARMUP_SIZE, max(sizes))
        return Plan(sizes, batches, CPU_DEFAULT_WARMUP, warmup_size), cpu_defaults
    batches = args.batches if args.batches is not None else 100
    return Plan(sizes, batches, WARMUP_BATCHES), False


def run_batch(backend: Any, history: Any, input_format: int, size: int) -> None:
    """Encode the position, build a batch of ``size`` copies, evaluate, touch every output."""
    touch(backend.evaluate(make_batch(history, input_format, size)))


def make_batch(history: Any, input_format: int, size: int) -> Any:
    """The position encoded and repeated ``size`` times (a ``PlanesBatch``).

    The position is encoded once per batch and repeated with numpy: encoding 1024 positions one
    by one in Python takes ~35 ms, longer than a GPU's whole forward pass of that batch, while
    lc0's C++ encoder needs ~1 us each. The timing still covers encoding, building the arrays,
    the backend's host->device copy, the network and the device->host copy of the outputs.
    """
    one = history.encode(input_format)
    if size == 1:  # no copies: at one position this path is a visible share of the batch's time
        return PlanesBatch(one.masks[None], one.values[None])
    return PlanesBatch(np.repeat(one.masks[None], size, axis=0), np.repeat(one.values[None], size, axis=0))


def touch(out: Any) -> None:
    """Read every output: completes any device -> host copy (lc0 fetches results the same way)."""
    float(out.policy[-1, -1]) + float(out.wdl[-1, 0]) + float(out.moves_left[-1])


def in_flight_for(backend: Any, asked: int | None) -> int:
    """Batches to keep in flight: ``--in-flight``, else the backend's ``batches_in_flight`` (the
    multi-device backends), else 1 (lc0's)."""
    if asked:
        return asked
    return max(1, int(getattr(backend, "batches_in_flight", 1)))


def bench_size(backend: Any, history: Any, input_format: int, size: int, batches: int,
               progress: Reporter | None = None, in_flight: int = 1) -> BatchStats:
    """Time ``batches`` batches of ``size`` positions from one thread, ``in_flight`` of them sent
    before the oldest is waited for (1: each batch evaluated before the next is built), and
    return the statistics of their completion times."""
    completions = []
    pending: deque[Any] = deque()
    sent = 0
    start = time.perf_counter()
    while sent < batches or pending:
        if in_flight <= 1:  # lc0's way: build, evaluate, read, then the next
            run_batch(backend, history, input_format, size)
            sent += 1
        else:
            while sent < batches and len(pending) < in_flight:
                pending.append(backend.evaluate_async(make_batch(history, input_format, size)))
                sent += 1
            touch(pending.popleft().result())
        completions.append(time.perf_counter())
        if progress is not None:
            progress.update(size)
    return compute_stats(size, start, [completions])


def backend_list(text: str) -> list[str]:
    """``--backend cuda,cuda-fp16`` -> the names, each checked before anything loads: known, and
    (with several) able to run here, so that no measurement is thrown away by a later failure."""
    from lc0py.backends.registry import AUTO, check_name, unavailable_reason
    from lc0py.errors import BackendUnavailable

    names = [check_name(n) for n in text.split(",") if n.strip()]
    if not names:
        raise UsageError("--backend: no backend given")
    if len(names) > 1:
        for name in names:
            reason = unavailable_reason(name) if name != AUTO else None
            if reason is not None:
                raise BackendUnavailable(f"--backend '{name}': {reason}")
    return names


def run(args: argparse.Namespace) -> int:
    from lc0py.backends.registry import needs_weights
    from lc0py.chess import PositionHistory

    for flag, (attr, lo, hi) in INT_FLAGS.items():
        setattr(args, attr, int_value(flag, getattr(args, attr), lo, hi))
    fen = normalise_fen(args.fen) if args.fen is not None else None
    try:
        history = PositionHistory.from_fen(fen)  # validates --fen before anything slow
    except PositionError as exc:
        raise PositionError(f"--fen: {exc}") from None
    weights: Path | None = None
    if args.weights is not None and args.weights.strip() not in (RANDOM, AUTODISCOVER):
        weights = Path(args.weights)
        check_regular_file(str(weights), "file", UsageError, label=f"--weights {weights}")
    names = backend_list(args.backend)
    make_plan(args, is_cpu=False)  # every flag checked before anything loads
    target = json_target(args, "backendbench")
    if args.plot is not None:
        from lc0py.tools.plotting import pyplot

        pyplot()  # matplotlib missing: say so now, not after the measurements
    if weights is None and any(needs_weights(n) for n in names):  # found or generated once for all
        weights = resolve_weights(args.weights, "backendbench", speed_tool=True)
    rows: list[dict[str, Any]] = []
    devices: dict[str, str] = {}
    for index, name in enumerate(names):
        rows += bench_backend(args, name, weights, history, target, index == 0, len(names) > 1, devices)
    if target.file is not None:
        JsonTarget(False, target.file).write("\n".join(json.dumps(row) for row in rows))
    if args.plot is not None:
        net = weights.name if weights is not None else "no net (random backend)"
        if weights is not None and weights.name == DEFAULT_NET_FILE:
            net = "built-in T82 (random weights)"
        plot(rows, args.plot, args.backend_opts, net, devices.get("label", ""))
        print(f"backendbench: plot written to {args.plot}", file=sys.stderr)
    return 0


def bench_backend(args: argparse.Namespace, name: str, weights: Path | None, history: Any,
                  target: JsonTarget, first: bool = True, several: bool = False,
                  devices: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Run the plan on backend ``name``; print its rows (CSV or JSON lines) and return them.
    With ``several`` backends, a ``# backend NAME`` line precedes each one's CSV rows. The device
    it ran on goes into ``devices["label"]`` (joined with " / " when backends differ)."""
    from lc0py.backends.registry import create_backend, is_cpu_backend

    rows: list[dict[str, Any]] = []
    backend = create_backend(name, weights, args.backend_opts)
    try:
        if devices is not None:
            label = device_label(backend)
            known = devices.get("label", "")
            devices["label"] = label if not known or label in known.split(" / ") else f"{known} / {label}"
        plan, cpu_defaults = make_plan(args, is_cpu_backend(backend))
        if cpu_defaults:
            print(f"backendbench: CPU backend '{backend.name}': small CPU plan: {plan.describe()} "
                  f"(lc0's plan, sizes 1..256 x 100 batches, is for GPUs; --batches/--batch-sizes/... "
                  f"change it)", file=sys.stderr, flush=True)
        fmt = backend.info.input_format
        in_flight = in_flight_for(backend, args.in_flight)
        if in_flight > 1:
            print(f"backendbench: {backend.name}: {in_flight} batches in flight", file=sys.stderr, flush=True)
        warm = plan.warmup_size or max(plan.sizes)
        total = plan.warmup * warm + plan.batches * sum(plan.sizes)
        with progress(total, f"backendbench {backend.name}", unit="pos") as bar:
            bar.set_postfix(size=f"warm-up {warm}")
            for _ in range(plan.warmup):
                run_batch(backend, history, fmt, warm)
                bar.update(warm)
            for index, size in enumerate(plan.sizes):
                bar.set_postfix(size=size)
                stats = bench_size(backend, history, fmt, size, plan.batches, bar, in_flight)
                with bar.suspended():  # the row on stdout, the bar redrawn below it
                    rows.append(_emit(args, backend.name, stats, index, first, several, target))
    finally:
        backend.close()
    return rows


def _emit(args: argparse.Namespace, name: str, stats: BatchStats, index: int, first: bool, several: bool,
          target: JsonTarget) -> dict[str, Any]:
    """Print one batch size's row (a JSON line, or the CSV row under its header) and return it."""
    row = {"backend": name, **stats.as_dict()}
    if target.stdout:
        sys.stdout.write(json.dumps(row) + "\n")
    else:
        if index == 0 and several:  # which backend the following rows belong to
            sys.stdout.write(f"# backend {name}\n")
        if header_due(index, args.header_only_once) and (first or not args.header_only_once):
            sys.stdout.write(HEADER + "\n")
        sys.stdout.write(stats.csv_row() + "\n")
    sys.stdout.flush()
    return row


def spread_nps(row: dict[str, Any]) -> tuple[float, float]:
    """The nps range one standard deviation of the per-batch times spans: ``size / (mean +- sdev)``
    (asymmetric in nps; a spread as wide as the mean has no upper end and uses the fastest batch)."""
    size, mean, sdev = float(row["size"]), float(row["mean_ms"]), float(row.get("sdev_ms", 0.0))
    low = 1000.0 * size / (mean + sdev) if mean + sdev > 0 else 0.0
    high = 1000.0 * size / (mean - sdev) if mean - sdev > 0 else float(row.get("max_nps", row["nps"]))
    return low, high


def plot_title(net: str, device: str, backend_opts: str = "") -> str:
    """``lc0py backendbench: NET on DEVICE (options)``."""
    opts = f" ({backend_opts})" if backend_opts else ""
    return f"lc0py backendbench: {net} on {device}{opts}"


def device_label(backend: Any) -> str:
    """The device a backend ran on, for the plot's title: the GPU's name, else the CPU's model."""
    platform = getattr(backend, "platform", None)
    name = getattr(getattr(platform, "info", None), "name", None)
    if isinstance(name, str) and name:
        return name
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform as host

    return host.processor() or host.machine() or "CPU"


def plot(rows: list[dict[str, Any]], path: str, backend_opts: str = "", net: str = "",
         device: str = "") -> None:
    """Nodes per second against batch size, one line per backend (log-log when sizes span 8x),
    each point with an error bar from the per-batch times (mean +- one standard deviation); the
    net and the device in the title."""
    from lc0py.tools.plotting import line_plot

    series: dict[str, list[tuple[float, float]]] = {}
    spread: dict[str, list[tuple[float, float, float]]] = {}
    for row in rows:
        series.setdefault(row["backend"], []).append((row["size"], row["nps"]))
        if "mean_ms" in row:
            spread.setdefault(row["backend"], []).append((row["size"], *spread_nps(row)))
    sizes = [row["size"] for row in rows]
    wide = bool(sizes) and max(sizes) >= 8 * min(sizes)
    line_plot(series, path, xlabel="batch size", ylabel="nodes per second (mean, bar: ±1 sd of batch time)",
              title=plot_title(net or "?", device or "?", backend_opts), log_x=wide, log_y=wide,
              spread=spread)
