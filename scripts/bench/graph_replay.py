#!/usr/bin/env python3
"""Device time of one forward pass: a batch size's captured graph replayed back to back.

backendbench times a batch from the host (upload, graph launch, wait, read back), so at small
batches its figures move by ±10 % between runs. This times what the device does: each variant's
graph for a batch size replayed ``--replays`` times in a row on its stream, between two events,
so the host is never in the loop; the per-pass time is the graph's critical path plus the
device's gap between graph launches. The variants (``--backend-opts`` strings) are built in one
process and timed in alternated order, round after round, so they are compared within one run
(docs/performance.md: ratios in one run, medians).

    PYTHONPATH=$PWD python3 scripts/bench/graph_replay.py --weights /tmp/t82.pb.gz \\
        --variants "smolgen_early=off;smolgen_early=on" --sizes 1,2,4 --rounds 6
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

import numpy as np

from lc0py.backends.base import PlanesBatch
from lc0py.errors import Lc0pyError


def planes(n: int, seed: int) -> PlanesBatch:
    """``n`` random positions' input planes (masks and values)."""
    rng = np.random.default_rng(seed)
    masks = rng.integers(0, 2**63, size=(n, 112), dtype=np.uint64)
    return PlanesBatch(masks, rng.uniform(0.5, 1.5, (n, 112)).astype(np.float32))


class Variant:
    """One backend built with one options string, and the replay timing of its graphs."""

    def __init__(self, backend_name: str, weights: str, opts: str, max_batch: int) -> None:
        from lc0py.backends.registry import create_backend

        self.opts = opts
        text = ",".join(x for x in (opts, f"max_batch={max_batch}") if x)
        self.backend = create_backend(backend_name, weights, text)
        self.gpu = self.backend.gpu  # type: ignore[attr-defined]
        self.platform = self.backend.platform  # type: ignore[attr-defined]
        # buffers for the largest size's graph bucket now: buffers grown later (a size whose bucket
        # is above max_batch, e.g. 68 -> 72) would drop the graphs already captured
        runner = self.gpu.runner
        runner.ensure(runner.bucket(max_batch))
        self.start = self.platform.create_event(timing=True)
        self.end = self.platform.create_event(timing=True)

    def graph(self, n: int) -> int:
        """The captured graph that runs ``n`` positions (captured by a first evaluation)."""
        self.gpu.submit(planes(n, n)).result()
        runner = self.gpu.runner
        bucket = runner.bucket(n)
        found = [g for (run, _flash), g in runner._graphs.items() if run == bucket]
        if not found:
            print(f"graph_replay: no graph for {n} positions (graphs=off in '{self.opts}'?)", file=sys.stderr)
            sys.exit(2)
        return found[0]

    def pass_ms(self, graph: int, replays: int) -> float:
        """Milliseconds a pass: ``replays`` replays of ``graph`` between two events."""
        p, stream = self.platform, self.gpu.ops.main
        p.event_record(self.start.handle, stream)
        for _ in range(replays):
            p.launch_graph(graph, stream)
        p.event_record(self.end.handle, stream)
        p.event_synchronize(self.end.handle)
        return p.event_elapsed_ms(self.start.handle, self.end.handle) / replays

    def close(self) -> None:
        self.backend.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--weights", required=True)
    ap.add_argument("--backend", default="cuda-fp16")
    ap.add_argument("--variants", required=True, help="';'-separated --backend-opts strings")
    ap.add_argument("--sizes", default="1")
    ap.add_argument("--replays", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--json", default=None, help="write every round's figures here (JSON lines)")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    texts = [t.strip() for t in args.variants.split(";")]
    variants: list[Variant] = []
    try:
        for t in texts:
            variants.append(Variant(args.backend, args.weights, t, max(sizes)))
    except Lc0pyError as exc:  # no GPU, a bad net or option: one line, as the CLI says it
        for v in variants:
            v.close()
        print(f"graph_replay: {exc}", file=sys.stderr)
        sys.exit(2)
    try:
        graphs = {(i, n): v.graph(n) for i, v in enumerate(variants) for n in sizes}
        times: dict[tuple[int, int], list[float]] = {key: [] for key in graphs}
        for key, g in graphs.items():  # warm-up: clocks up, caches filled
            variants[key[0]].pass_ms(g, args.replays // 4 or 1)
        for r in range(args.rounds):
            order = list(range(len(variants)))
            if r % 2:
                order.reverse()
            for n in sizes:
                for i in order:
                    times[(i, n)].append(variants[i].pass_ms(graphs[(i, n)], args.replays))
        rows = []
        for n in sizes:
            base = times[(0, n)]
            for i, v in enumerate(variants):
                t = times[(i, n)]
                ratios = [b / x for b, x in zip(base, t, strict=True)]
                rows.append(dict(size=n, opts=v.opts, ms=statistics.median(t), rounds_ms=t,
                                 speed_vs_first=statistics.median(ratios), rounds_ratio=ratios))
        if args.json:
            with open(args.json, "w") as f:
                for row in rows:
                    f.write(json.dumps(row) + "\n")
        print(f"{args.weights} {args.backend}: ms a pass, median of {args.rounds} rounds of "
              f"{args.replays} replays; speed = first variant's time / this one's, per round")
        for row in rows:
            rr = " ".join(f"{x:.3f}" for x in row["rounds_ratio"])
            speed = row["speed_vs_first"]
            print(f"{row['size']:5d}  {row['ms']:.4f} ms  x{speed:.3f}  [{rr}]  {row['opts']}")
    finally:
        for v in variants:
            v.close()


if __name__ == "__main__":
    main()
