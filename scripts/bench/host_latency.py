#!/usr/bin/env python3
"""Where a small batch's host-timed latency goes, beyond the device's own time.

backendbench times a batch from the host: encode the position, upload, launch the captured
graph, wait, read the outputs back. At one position T82's pass takes ~0.70 ms of device time
(``graph_replay.py``) and backendbench 0.71-0.82 ms, so the host adds 30-100 us a batch. This
splits that, batch by batch, for one backend:

* ``encode``: ``backendbench.make_batch`` (the position encoded, repeated to the batch size);
* ``submit``: ``evaluate_async`` (copy into the pinned slot, the upload, the graph launch, the
  output copies and the event, all enqueued);
* ``wait``: until the device has finished (the event);
* ``read``: ``result()`` after that (the outputs as numpy arrays) and reading them;
* ``device``: the same graph replayed back to back (``graph_replay.Variant``), the time the
  device needs with no host in the loop.

Every vendor call the platform makes inside ``submit`` is timed as well (``--calls``), so the
Python around them shows as the remainder. Medians over ``--batches`` batches.

    PYTHONPATH=$PWD python3 scripts/bench/host_latency.py --weights /tmp/t82.pb.gz --sizes 1,4,16
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from graph_replay import Variant  # noqa: E402

from lc0py.errors import Lc0pyError  # noqa: E402

PHASES = ("encode", "submit", "wait", "read", "total")
TIMED_CALLS = ("bind_thread", "copy_h2d", "copy_d2h", "launch_graph", "event_record", "event_synchronize")


class CallTimer:
    """Wraps some of a platform object's methods (instance attributes shadow the class's) and
    adds each call's wall time to ``spent[name]`` while ``on``."""

    def __init__(self, platform: Any, names: tuple[str, ...]) -> None:
        self.spent: dict[str, float] = defaultdict(float)
        self.on = False
        for name in names:
            setattr(platform, name, self._wrap(name, getattr(platform, name)))

    def _wrap(self, name: str, fn: Any) -> Any:
        def timed(*args: Any, **kw: Any) -> Any:
            if not self.on:
                return fn(*args, **kw)
            t = time.perf_counter()
            try:
                return fn(*args, **kw)
            finally:
                self.spent[name] += time.perf_counter() - t

        return timed

    def take(self) -> dict[str, float]:
        out = dict(self.spent)
        self.spent.clear()
        return out


def time_batches(variant: Variant, timer: CallTimer | None, size: int, batches: int) -> dict[str, Any]:
    """Median microseconds of each phase over ``batches`` batches of ``size`` positions."""
    from lc0py.chess import PositionHistory
    from lc0py.tools.backendbench import make_batch, touch

    backend = variant.backend
    history = PositionHistory.from_fen(None)
    fmt = int(backend.network.input_format)
    phases: dict[str, list[float]] = {p: [] for p in PHASES}
    calls: dict[str, list[float]] = defaultdict(list)
    for i in range(batches + batches // 5):
        t0 = time.perf_counter()
        batch = make_batch(history, fmt, size)
        t1 = time.perf_counter()
        if timer is not None:
            timer.on = True
        pending = backend.evaluate_async(batch)
        if timer is not None:
            timer.on = False
        t2 = time.perf_counter()
        pending._slot.event.synchronize()  # the device is done: result() below only reads
        t3 = time.perf_counter()
        touch(pending.result())
        t4 = time.perf_counter()
        spent = timer.take() if timer is not None else {}
        if i < batches // 5:
            continue  # warm-up
        for name, a, b in (("encode", t0, t1), ("submit", t1, t2), ("wait", t2, t3), ("read", t3, t4),
                           ("total", t0, t4)):
            phases[name].append((b - a) * 1e6)
        for name in TIMED_CALLS:
            calls[name].append(spent.get(name, 0.0) * 1e6)
    row: dict[str, Any] = {"size": size, "opts": variant.opts}
    row.update({f"{p}_us": statistics.median(v) for p, v in phases.items()})
    if timer is not None:
        row["calls_us"] = {name: statistics.median(v) for name, v in calls.items()}
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--weights", required=True)
    ap.add_argument("--backend", default="cuda-fp16")
    ap.add_argument("--backend-opts", default="")
    ap.add_argument("--sizes", default="1")
    ap.add_argument("--batches", type=int, default=500)
    ap.add_argument("--replays", type=int, default=300)
    ap.add_argument("--calls", action="store_true", help="also time each vendor call inside submit")
    ap.add_argument("--json", default=None, help="write each size's figures here (JSON lines)")
    args = ap.parse_args()
    try:
        sizes = [int(s) for s in args.sizes.split(",")]
        if not sizes or min(sizes) < 1 or args.batches < 1 or args.replays < 1:
            raise ValueError
    except ValueError:
        print("host_latency: --sizes must be positive integers, --batches and --replays positive",
              file=sys.stderr)
        sys.exit(2)
    try:
        variant = Variant(args.backend, args.weights, args.backend_opts, max(sizes))
    except Lc0pyError as exc:  # no GPU, a bad net or option: one line, as the CLI says it
        print(f"host_latency: {exc}", file=sys.stderr)
        sys.exit(2)
    try:
        timer = CallTimer(variant.platform, TIMED_CALLS) if args.calls else None
        rows = []
        for n in sizes:
            graph = variant.graph(n)
            variant.pass_ms(graph, args.replays // 4 or 1)
            row = time_batches(variant, timer, n, args.batches)
            row["device_us"] = variant.pass_ms(graph, args.replays) * 1000
            row["host_over_device_us"] = row["total_us"] - row["device_us"]
            rows.append(row)
        if args.json:
            with open(args.json, "w") as f:
                for row in rows:
                    f.write(json.dumps(row) + "\n")
        print(f"{args.weights} {args.backend} {args.backend_opts}: us a batch, medians of {args.batches}")
        print(f"{'size':>5} {'encode':>7} {'submit':>7} {'wait':>7} {'read':>7} {'total':>7} "
              f"{'device':>7} {'host+':>7}")
        cols = [f"{p}_us" for p in PHASES[:4]] + ["total_us", "device_us", "host_over_device_us"]
        for r in rows:
            print(f"{r['size']:5d} " + " ".join(f"{r[c]:7.1f}" for c in cols))
            if "calls_us" in r:
                print("      inside submit: " + ", ".join(f"{k} {v:.1f}" for k, v in r["calls_us"].items()))
    finally:
        variant.close()


if __name__ == "__main__":
    main()
