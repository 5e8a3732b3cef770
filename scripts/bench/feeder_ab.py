#!/usr/bin/env python
"""The search's feeder thread on and off (lc0py/search/feeder.py), in alternating rounds.

Runs ``search_timeline.py`` with and without ``--no-feeder`` in turn (``--rounds`` each, off
first), keeps every run's output under ``--out`` and writes ``summary.txt``: per run and as
medians, nodes per second, the search thread's CPU us per node, the feeder thread's, and the
backend's share of wall time with a batch in flight. One command on the device:

    python scripts/bench/feeder_ab.py --out OUT -w maia-1900.pb.gz -b cuda-fp16 --rounds 3
    python scripts/bench/feeder_ab.py --out OUT -w maia-1900.pb.gz -b sim-gpu --delay-ms 0.25

Every argument after the known ones goes to ``search_timeline.py`` unchanged.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
from pathlib import Path

TIMELINE = Path(__file__).resolve().parent / "search_timeline.py"


def figures(text: str) -> dict[str, float]:
    """The numbers ``search_timeline.py`` printed that the comparison reads."""
    nps = re.findall(r"counted: \d+ playouts in [0-9.]+ s = (\d+) nps", text)
    search = re.search(r"search thread CPU time: .* ([0-9.]+) us per node", text)
    feeder = re.search(r"feeder threads CPU time: [0-9.]+ s = ([0-9.]+) us per node", text)
    flight = re.search(r"backend has a batch in flight: ([0-9.]+)%", text)
    if not (nps and search and feeder and flight):
        raise ValueError("search_timeline.py's output lacks its summary lines")
    return {
        "nps": float(nps[-1]),
        "search_us_node": float(search.group(1)),
        "feeder_us_node": float(feeder.group(1)),
        "in_flight_pct": float(flight.group(1)),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="folder for the runs' outputs and summary.txt")
    ap.add_argument("--rounds", type=int, default=3)
    args, rest = ap.parse_known_args()
    if args.rounds < 1:
        print("feeder_ab.py: --rounds must be at least 1", file=sys.stderr)
        raise SystemExit(2)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results: dict[str, list[dict[str, float]]] = {"off": [], "on": []}
    lines = [f"search_timeline.py {' '.join(rest)}"]
    for r in range(1, args.rounds + 1):
        for mode in ("off", "on"):
            cmd = [sys.executable, str(TIMELINE), *rest] + (["--no-feeder"] if mode == "off" else [])
            run = subprocess.run(cmd, capture_output=True, text=True, check=False)
            (out / f"{mode}.{r}.txt").write_text(run.stdout + run.stderr)
            if run.returncode != 0:
                print(run.stdout + run.stderr, file=sys.stderr)
                raise SystemExit(f"feeder_ab.py: round {r} ({mode}) failed, exit {run.returncode}")
            f = figures(run.stdout)
            results[mode].append(f)
            lines.append(f"round {r} feeder {mode:3s}: " + ", ".join(f"{k} {v:g}" for k, v in f.items()))
    for mode, runs in results.items():
        med = {k: statistics.median(x[k] for x in runs) for k in runs[0]}
        lines.append(f"median feeder {mode:3s}: " + ", ".join(f"{k} {v:g}" for k, v in med.items()))
    text = "\n".join(lines) + "\n"
    (out / "summary.txt").write_text(text)
    print(text, end="")


if __name__ == "__main__":
    main()
