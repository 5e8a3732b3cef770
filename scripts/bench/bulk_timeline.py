#!/usr/bin/env python
"""Where a bulk-eval job's devices starve, on a CPU: simulated devices, real readers and writers.

Runs ``lc0py.tools.bulk`` on a PGN file with ``demux`` over ``--devices`` children of the
``random`` backend, each sleeping ``--delay-ms`` per batch on a thread of its own (a device
computing while the host goes on), after ``--load-s`` seconds of "network loading" during which
the reader processes start, as they do while a real net is uploaded. Prints the job's profile
(``bulk-eval --profile``): per device when it got its first batch, when it returned its last,
its starvation before the first batch and between batches, its partial batches; and the ideal
time (rows / the devices' rate).

    python scripts/bench/bulk_timeline.py --games 1200 --chunk 64 --devices 2 --delay-ms 40
    python scripts/bench/bulk_timeline.py ... --whole-chunks   (every chunk read by one worker)

The PGN comes from ``scripts/device/make_games.py`` (``--pgn FILE`` to reuse one). Nothing in
lc0py is changed, except with ``--whole-chunks`` (the sub-range reading turned off for an A/B).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from lc0py.api.net import open_net  # noqa: E402
from lc0py.tools.bulk import job as J  # noqa: E402
from lc0py.tools.bulk_eval import print_profile  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pgn", help="PGN to read (default: --games random games, generated)")
    ap.add_argument("--games", type=int, default=1200)
    ap.add_argument("--chunk", type=int, default=64, help="games per chunk")
    ap.add_argument("--devices", type=int, default=2)
    ap.add_argument("--batch", type=int, default=512, help="rows per device batch")
    ap.add_argument("--delay-ms", type=float, default=40.0, help="device time per batch")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--writers", type=int, default=1)
    ap.add_argument("--load-s", type=float, default=1.0, help="the net's loading, readers starting")
    ap.add_argument("--whole-chunks", action="store_true", help="every chunk read by one worker")
    ap.add_argument("--json", action="store_true", help="the summary as JSON on stdout too")
    args = ap.parse_args()
    if args.whole_chunks:
        J.PART_GAMES = J.FIRST_PART_GAMES = 1 << 30
    work = Path(tempfile.mkdtemp(prefix="bulk_timeline_"))
    try:
        pgn = Path(args.pgn) if args.pgn else work / "games.pgn"
        if not args.pgn:
            maker = Path(__file__).resolve().parents[1] / "device" / "make_games.py"
            cmd = [sys.executable, str(maker), "--games", str(args.games), "--pgn", str(pgn)]
            subprocess.run(cmd, check=True)
        groups = ",".join("()" for _ in range(args.devices))
        options = f"backend=random,delay_ms={args.delay_ms},{groups}"
        settings = J.make_settings(pgn, None, "jsonl", 10, args.chunk, "fen_only", (), None, "random")
        plan = J.prepare_job(pgn, work / "out", settings)
        loader = J.ChunkLoader(plan, 0, args.workers)
        try:
            time.sleep(args.load_s)
            with open_net(None, "demux", options) as net:
                summary = J.run_local(
                    plan, net.backend, batch=args.batch * args.devices, writers=args.writers,
                    show_progress=False, loader=loader,
                )
        finally:
            loader.close()
        assert summary.profile is not None
        print_profile(summary.profile, summary.seconds, sys.stdout)
        ideal = summary.positions / (args.devices * args.batch / (args.delay_ms / 1000))
        print(
            f"{summary.positions} positions in {summary.seconds:.2f} s = "
            f"{summary.positions_per_second:,.0f}/s; the devices alone: {ideal:.2f} s "
            f"({summary.seconds / ideal:.2f}x)"
        )
        if args.json:
            print(json.dumps(summary.__dict__))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
