#!/usr/bin/env python3
"""Tune the flash kernel for several nets in one go: ``lc0py tune`` per (preset, mode).

    PYTHONPATH=$PWD python3 scripts/dev/tune_backend.py --presets t82,t82-h12,t82-h8,t82-h6 \\
        --modes quick,full --out /tmp/tune [--batch-sizes 256,1024 --repeats 5 --batches 10]

Each run prints its table and writes ``OUT/tune_<preset>_<mode>.json``; the last mode's winner is
what stays saved for the backend (full after quick). Exit status 1 if any run failed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lc0py.cli.main import main as lc0py_main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--presets", default="t82,t82-h12,t82-h8,t82-h6")
    ap.add_argument("--modes", default="quick,full", help="quick, full or both (comma list)")
    ap.add_argument("--out", default="tune_results", help="folder for the JSON files")
    ap.add_argument("--backend", default="cuda-fp16")
    args, passthrough = ap.parse_known_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    status = 0
    for preset in args.presets.split(","):
        for mode in args.modes.split(","):
            if mode not in ("quick", "full"):
                print(f"tune_backend: mode '{mode}' is not quick or full", file=sys.stderr)
                return 2
            print(f"\n## {preset} ({mode})\n", flush=True)
            cmd = [
                "tune",
                "--preset",
                preset,
                "--backend",
                args.backend,
                "--json",
                str(out / f"tune_{preset}_{mode}.json"),
                *passthrough,
            ]
            if mode == "quick":
                cmd.append("--quick")
            rc = lc0py_main(cmd)
            sys.stdout.flush()
            status |= int(rc != 0)
    return status


if __name__ == "__main__":
    sys.exit(main())
