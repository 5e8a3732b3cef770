#!/usr/bin/env python
"""Where one process's host time goes when it drives several devices through ``demux`` /
``roundrobin``: simulated GPU children (scripts/bench/sim_gpu.py), so it runs on a CPU.

For 1, 2 and 4 children at 256 and 1024 positions a child, the script drives the multi backend
as backendbench does (``--in-flight`` batches kept in flight, each result read as it completes)
and reports per batch: the caller thread's time in ``evaluate_async`` (submit) and in
``result()`` (wait, including any join done there), the caller's CPU seconds, the whole process's
CPU seconds, and per child the share of the wall time its device was idle (nothing queued: the
device waiting for the host). With ``--child-profile`` the multi backend's own per-child thread
profile (``MultiBackend.profile()``, when it has one) is printed too.

    python scripts/bench/demux_profile.py                        # T82-on-H100-like device times
    python scripts/bench/demux_profile.py --children 1,2 --per-child 256 --batches 40
    python scripts/bench/demux_profile.py --device-ms 0 --per-position-us 0   # host cost alone

On a GPU host the same measurement on real devices is ``--real cuda-fp16 -w t82.pb.gz`` (children
``(gpu=0)..(gpu=N-1)``). Wall-clock numbers on a loaded machine are noisy: compare the CPU seconds
and the device idle shares, and say the load (printed first).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import deque
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from lc0py.backends.base import PlanesBatch  # noqa: E402
from lc0py.backends.multi import backends as multi_backends  # noqa: E402
from lc0py.backends.multi.backends import DemuxBackend, MultiBackend, RoundRobinBackend  # noqa: E402
from lc0py.backends.multi.children import Child, ChildSpec  # noqa: E402
from lc0py.backends.options import BackendOptions  # noqa: E402
from lc0py.backends.registry import create_backend  # noqa: E402
from scripts.bench.sim_gpu import T82_H100_DELAY_MS, T82_H100_PER_POSITION_US, SimulatedGpu  # noqa: E402


def sim_children(count: int, delay_ms: float, per_position_us: float) -> list[Child]:
    children = []
    for k in range(count):
        inner = create_backend("random", None, "seed=1")
        sim = SimulatedGpu(inner, delay_ms, per_position_us, fill=False)
        spec = ChildSpec(f"sim child {k}", "sim-gpu", BackendOptions({}, "sim-gpu"), 1, 1024)
        children.append(Child(spec, sim))
    return children


def real_backend(kind: str, backend: str, weights: str | None, count: int) -> MultiBackend:
    groups = ",".join(f"(gpu={g})" for g in range(count))
    made = create_backend(kind, weights, f"backend={backend},max_batch=1024,{groups}")
    assert isinstance(made, MultiBackend)
    return made


def random_batch(n: int) -> PlanesBatch:
    rng = np.random.default_rng(n)
    masks = rng.integers(0, 2**63, (n, 112), dtype=np.uint64)
    return PlanesBatch(masks, rng.random((n, 112), dtype=np.float32))


def drive(multi: MultiBackend, size: int, batches: int, in_flight: int) -> dict[str, Any]:
    """``batches`` batches of ``size`` with ``in_flight`` kept in flight; the caller's times."""
    batch = random_batch(size)
    for _ in range(2):  # warm-up: every child's pools and slots (graphs), the threads started
        multi.evaluate(batch)
    sims = [c.backend for c in multi.children if isinstance(c.backend, SimulatedGpu)]
    for s in sims:
        s.reset_clock()
    reset = getattr(multi, "reset_profile", None)
    if reset is not None:
        reset()
    submit = wait = 0.0
    pending: deque[Any] = deque()
    c0, p0, t0 = time.thread_time(), time.process_time(), time.perf_counter()
    sent = 0
    while sent < batches or pending:
        while sent < batches and len(pending) < in_flight:
            a = time.perf_counter()
            pending.append(multi.evaluate_async(batch))
            submit += time.perf_counter() - a
            sent += 1
        a = time.perf_counter()
        out = pending.popleft().result()
        float(out.policy[-1, -1]) + float(out.wdl[-1, 0])  # touch the outputs, as backendbench
        wait += time.perf_counter() - a
    wall = time.perf_counter() - t0
    caller_cpu, process_cpu = time.thread_time() - c0, time.process_time() - p0
    row: dict[str, Any] = {
        "children": len(multi.children), "batch": size, "in_flight": in_flight, "batches": batches,
        "nps": batches * size / wall, "wall_s": wall,
        "submit_ms": 1e3 * submit / batches, "wait_ms": 1e3 * wait / batches,
        "caller_cpu_ms": 1e3 * caller_cpu / batches, "process_cpu_ms": 1e3 * process_cpu / batches,
        "device_idle": [s.idle_s() / wall for s in sims],
        "device_busy": [s.busy_s / wall for s in sims],
    }
    profile = getattr(multi, "profile", None)
    if profile is not None:
        row["child_threads"] = profile()
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kind", default="demux", choices=("demux", "roundrobin"))
    ap.add_argument("--children", default="1,2,4")
    ap.add_argument("--per-child", default="256,1024", help="positions a child per batch")
    ap.add_argument("--batches", type=int, default=60)
    ap.add_argument("--in-flight", default="1,2", help="batches in flight (several: each measured)")
    ap.add_argument("--device-ms", type=float, default=T82_H100_DELAY_MS, help="device ms a batch")
    ap.add_argument("--per-position-us", type=float, default=T82_H100_PER_POSITION_US)
    ap.add_argument("--real", default=None, metavar="BACKEND", help="real GPU children (e.g. cuda-fp16)")
    ap.add_argument("-w", "--weights", default=None)
    ap.add_argument("--child-profile", action="store_true")
    ap.add_argument("--paths", default="child",
                    help="child: each child's host work on its own threads; resolve: launched on the "
                         "caller's thread, waited for and joined on the child's; caller: all on the caller's "
                         "thread (the way before); several (caller,resolve,child): alternated, same run")
    ap.add_argument("--rounds", type=int, default=1, help="each configuration this often, paths alternated")
    ap.add_argument("--json", default=None, metavar="FILE", help="also write the rows as JSON lines")
    ap.add_argument("--switch-ms", type=float, default=None, help="sys.setswitchinterval (ms) for the run")
    args = ap.parse_args()
    if args.switch_ms is not None:
        sys.setswitchinterval(args.switch_ms / 1000)
    print(f"load: {os.getloadavg()}; cpus {os.cpu_count()}; device {args.device_ms} ms + "
          f"{args.per_position_us} us a position" if args.real is None else f"real {args.real}")
    rows: list[dict[str, Any]] = []
    print(f"{'path':6s} {'kind':10s} {'ch':>2s} {'batch':>6s} {'fly':>3s} {'nps':>8s} {'submit':>7s} "
          f"{'wait':>7s} {'callerCPU':>9s} {'procCPU':>8s}  device idle share per child")
    paths = args.paths.split(",")
    for count in map(int, args.children.split(",")):
        if args.real:
            multi = real_backend(args.kind, args.real, args.weights, count)
        else:
            children = sim_children(count, args.device_ms, args.per_position_us)
            multi = DemuxBackend(children) if args.kind == "demux" else RoundRobinBackend(children)
        try:  # one backend for every size, path and round (a real one takes seconds to load)
            for per in map(int, args.per_child.split(",")):
                size = per * count if args.kind == "demux" else per
                for fly in map(int, args.in_flight.split(",")):
                    for _ in range(args.rounds):
                        for path in paths:
                            rows.append(measure(args, multi, path, size, fly))
        finally:
            multi.close()
    if args.json:
        Path(args.json).write_text("".join(json.dumps(r) + "\n" for r in rows))


def measure(args: argparse.Namespace, multi: MultiBackend, path: str, size: int, fly: int) -> dict[str, Any]:
    """One configuration (every batch of the previous one is back: the path may change); its
    row printed."""
    multi_backends.CHILD_FEEDING = {"child": "threads"}.get(path, path)
    count = len(multi.children)
    inflight = fly if args.kind == "demux" else fly * count
    row = drive(multi, size, args.batches, inflight)
    row["kind"], row["path"] = args.kind, path
    idle = " ".join(f"{x:.0%}" for x in row["device_idle"])
    print(f"{path:6s} {args.kind:10s} {count:2d} {size:6d} {inflight:3d} {row['nps']:8.0f} "
          f"{row['submit_ms']:6.2f}m {row['wait_ms']:6.2f}m {row['caller_cpu_ms']:8.2f}m "
          f"{row['process_cpu_ms']:7.2f}m  {idle}", flush=True)
    if args.child_profile and path != "caller" and row.get("child_threads"):  # noqa: SIM102
        for c in row["child_threads"]:
            print("      " + ", ".join(f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}"
                                       for k, v in c.items()))
    return row


if __name__ == "__main__":
    main()
