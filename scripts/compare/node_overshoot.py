#!/usr/bin/env python
"""How far past a ``go nodes N`` limit lc0py and lc0 0.32.1 end, on the same real net.

    PYTHONPATH=$PWD python scripts/compare/node_overshoot.py --nets ../shared/nets \
        [--names meangirl-8 maia-1900] [--nodes 800] [--minibatch 0 32 256] \
        [--set SmartPruningFactor=0] [--json out.json]

Each engine runs as a UCI subprocess (``devtools.lc0_binary``: lc0 on its eigen backend, lc0py
on numpy) with only ``MinibatchSize`` set (0: neither engine is told, each uses its own default)
and the ``--set`` options, everything else as shipped. With smart pruning on (both engines'
default) a search usually stops well before N on these nets, so the overshoot is measured with
``--set SmartPruningFactor=0``. Each position is
``ucinewgame`` + ``position`` + ``go nodes N``; the overshoot is the ``nodes`` of the last
``info`` line before ``bestmove`` minus N (negative: smart pruning stopped early). The nets are
copied into a temporary folder first (never written where they lie). A measurement, not a test.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from devtools.lc0_binary import (  # noqa: E402
    UciSession,
    find_lc0_binary,
    lc0_command,
    lc0py_command,
    lc0py_env,
    position_command,
    set_options,
)

POSITIONS: tuple[tuple[str, str | None, tuple[str, ...]], ...] = (
    ("start", None, ()),
    ("ruy-lopez", None, ("e2e4", "e7e5", "g1f3", "b8c6", "f1b5")),
    ("kiwipete", "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 10", ()),
    ("attack", "4rrk1/pp1n3p/3q2pQ/2p1pb2/2PP4/2P3N1/P2B2PP/4RRK1 b - - 7 19", ()),
    ("queens-off", "r3r1k1/2p2ppp/p1p1bn2/8/1q2P3/2NPQN2/PPP3PP/R4RK1 b - - 2 15", ()),
    ("rook-ending", "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 11", ()),
)
_NODES = re.compile(r"\bnodes (\d+)\b")


def final_nodes(lines: Sequence[str]) -> int:
    """``nodes`` of the last ``info`` line before ``bestmove``."""
    found = [int(m.group(1)) for s in lines if s.startswith("info ") and (m := _NODES.search(s))]
    if not found:
        raise ValueError(f"no 'info ... nodes' line in {list(lines)[-5:]}")
    return found[-1]


def search_nodes(session: UciSession, fen: str | None, moves: Sequence[str], nodes: int) -> int:
    session.send("ucinewgame")
    session.send(position_command(fen, moves))
    session.sync()
    lines = session.run([f"go nodes {nodes}"], lambda s: s.startswith("bestmove"))
    # lc0 answers a node limit while its last batch may still be evaluated; ``wait`` joins its
    # search thread, else the next ``ucinewgame`` clears the NN cache before that batch lands in
    # it and the next position starts with its evaluations cached
    session.send("wait")
    session.sync()
    return final_nodes(lines)


def measure(engine: str, command: list[str], env: dict[str, str] | None, minibatch: int,
            nodes: int, options: dict[str, object]) -> list[int]:
    """Final nodes per position for one engine at one ``MinibatchSize`` (0: not set)."""
    with UciSession(command, env=env, name=engine) as session:
        session.run(["uci"], lambda s: s == "uciok")
        set_options(session, {**options, **({"MinibatchSize": minibatch} if minibatch else {})})
        return [search_nodes(session, fen, moves, nodes) for _, fen, moves in POSITIONS]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nets", type=Path, default=ROOT.parent / "shared" / "nets")
    ap.add_argument("--names", nargs="+", default=["meangirl-8", "maia-1900"])
    ap.add_argument("--nodes", type=int, default=800)
    ap.add_argument("--minibatch", type=int, nargs="+", default=[0, 32, 256])
    ap.add_argument("--engines", nargs="+", default=["lc0", "lc0py"], choices=["lc0", "lc0py"])
    ap.add_argument("--set", nargs="*", default=[], metavar="NAME=VALUE",
                    help="UCI options given to both engines")
    ap.add_argument("--json", type=Path, help="also write the rows here")
    args = ap.parse_args(argv)
    options: dict[str, object] = {}
    for item in args.set:
        name, sep, value = item.partition("=")
        if not sep or not name:
            print(f"node_overshoot: --set {item!r}: expected NAME=VALUE", file=sys.stderr)
            return 2
        options[name] = value
    lc0 = find_lc0_binary()
    if "lc0" in args.engines and lc0 is None:
        print("node_overshoot: lc0's binary is not installed (the dev extra)", file=sys.stderr)
        return 2
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.names:
            source = args.nets / f"{name}.pb.gz"
            if not source.is_file():
                print(f"node_overshoot: --nets {args.nets}: no {source.name}", file=sys.stderr)
                return 2
            net = Path(tmp) / source.name
            shutil.copyfile(source, net)
            for mb in args.minibatch:
                for engine in args.engines:
                    if engine == "lc0":
                        assert lc0 is not None
                        got = measure(engine, lc0_command(lc0, net), None, mb, args.nodes, options)
                    else:
                        got = measure(engine, lc0py_command(net, "numpy"), lc0py_env(), mb, args.nodes,
                                      options)
                    over = [n - args.nodes for n in got]
                    row = {"net": name, "minibatch": mb or "default", "engine": engine, "options": args.set,
                           "nodes": got,
                           "max_over": max(over), "median_over": statistics.median(over)}
                    rows.append(row)
                    print(f"{name:11} mb={row['minibatch']!s:7} {engine:5} max +{max(over):4d} "
                          f"median {statistics.median(over):+7.1f}  nodes {got}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
