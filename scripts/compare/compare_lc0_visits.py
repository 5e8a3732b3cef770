#!/usr/bin/env python
"""Root visit counts of lc0py against lc0's own binary on the same net (VerboseMoveStats).

    python scripts/compare/compare_lc0_visits.py --lc0 /path/to/lc0 --weights weights/tiny-seed1.pb.gz
        [--nodes 100 400] [--minibatch-size 1]

Both engines: one search thread, MaxPrefetch 0, smart pruning off, `go nodes N` from a fresh
`ucinewgame`; prints per position whether the best move and every root N agree.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys

POSITIONS = [
    "startpos",
    "fen r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 10",
    "fen 8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 11",
    "fen 4rrk1/pp1n3p/3q2pQ/2p1pb2/2PP4/2P3N1/P2B2PP/4RRK1 b - - 7 19",
    "fen r3r1k1/2p2ppp/p1p1bn2/8/1q2P3/2NPQN2/PPP3PP/R4RK1 b - - 2 15",
    "fen 6k1/6p1/6Pp/ppp5/3pn2P/1P3K2/1PP2P2/3N4 b - - 0 1",
    "fen 6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1",
    "startpos moves g1f3 g8f6 f3g1 f6g8 g1f3",
]
LINE = re.compile(r"^info string (\S+)\s+\(\s*\d+\s*\)\s+N:\s+(\d+)")


def run(cmd: list[str], script: list[str]) -> list[list[str]]:
    """Send ``script`` line by line; after each ``go`` collect the output up to ``bestmove``."""
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
    assert proc.stdin is not None and proc.stdout is not None
    blocks = []
    for line in script:
        proc.stdin.write(line + "\n")
        proc.stdin.flush()
        if line.startswith("go"):
            block = []
            while True:
                out = proc.stdout.readline()
                if not out:
                    raise RuntimeError(f"{cmd[0]} ended early")
                out = out.strip()
                if out.startswith("info string "):
                    block.append(out)
                if out.startswith("bestmove"):
                    block.append(out)
                    break
            blocks.append(block)
    proc.stdin.write("quit\n")
    proc.stdin.flush()
    proc.wait(60)
    return blocks


def parse(block: list[str]) -> tuple[dict[str, int], str]:
    visits = {}
    for line in block:
        m = LINE.match(line)
        if m and m.group(1) != "node":
            visits[m.group(1)] = int(m.group(2))
    return visits, block[-1].split()[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lc0", required=True)
    ap.add_argument("--weights", required=True)
    ap.add_argument("--nodes", type=int, nargs="+", default=[100, 400])
    ap.add_argument("--minibatch-size", type=int, default=1)
    ap.add_argument("--max-prefetch", type=int, default=0)
    args = ap.parse_args()
    mb = args.minibatch_size
    script = ["uci", "setoption name VerboseMoveStats value true", "isready"]
    for pos in POSITIONS:
        for n in args.nodes:
            script += ["ucinewgame", f"position {pos}", f"go nodes {n}"]
    lc0 = [
        args.lc0,
        "--backend=eigen",
        f"--weights={args.weights}",
        f"--minibatch-size={mb}",
        f"--max-prefetch={args.max_prefetch}",
        "--threads=1",
        "--smart-pruning-factor=0",
    ]
    ours = [
        sys.executable,
        "-m",
        "lc0py",
        "uci",
        "--backend",
        "numpy",
        "--weights",
        args.weights,
        "--minibatch-size",
        str(mb),
        "--max-prefetch",
        str(args.max_prefetch),
        "--search-overlap",
        "false",
        "--smart-pruning-factor",
        "0",
    ]
    a = run(lc0, script)
    b = run(ours, script)
    same_best = identical = 0
    k = 0
    for pos in POSITIONS:
        for n in args.nodes:
            va, ba = parse(a[k])
            vb, bb = parse(b[k])
            k += 1
            same_best += ba == bb
            identical += va == vb
            total = max(1, sum(va.values()))
            l1 = sum(abs(va.get(m, 0) - vb.get(m, 0)) for m in set(va) | set(vb)) / total
            print(
                f"{n:5d} {'same' if ba == bb else 'DIFF'} best {ba}/{bb} "
                f"{'identical' if va == vb else f'L1 {l1:.3f}'} "
                f"N {sum(va.values())}/{sum(vb.values())}  {pos[:50]}"
            )
    print(f"same best move {same_best}/{k}, identical root visits {identical}/{k}")


if __name__ == "__main__":
    main()
