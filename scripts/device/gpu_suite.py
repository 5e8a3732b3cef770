#!/usr/bin/env python3
"""The GPU test suite (``pytest -m gpu``) in parts, one part a device call.

The whole suite takes ~450-520 s on an H200, plus ~55 s of search-core compile on a fresh machine,
close to the 600 s a device call may run (on 2026-11-29 one call stopped at 218 of 229 tests). The
parts are contiguous ranges of the collected test ids, in collection order, so ``--part 1`` in one
call and ``--part 2`` in the next run every test once. The real nets are used from ``.nets/`` when
``LC0PY_TEST_NETS`` is not set and that folder exists.

    PYTHONPATH=$PWD python3 scripts/device/gpu_suite.py --part 1 --parts 2 --out "$OUT"

Writes ``gpu_suite_<part>of<parts>.txt`` (the ids run, then pytest's output) under ``--out``; exits
with pytest's status (5 when the part is empty).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
from pathlib import Path

import pytest


class _Collector:
    """A pytest plugin that keeps the collected items' node ids."""

    def __init__(self) -> None:
        self.ids: list[str] = []

    def pytest_collection_finish(self, session: pytest.Session) -> None:  # after -m deselects
        self.ids = [item.nodeid for item in session.items]


def part_ids(ids: list[str], part: int, parts: int) -> list[str]:
    """Part ``part`` (1-based, ``main`` checks it is in 1..``parts``) of ``parts`` contiguous,
    near-equal ranges of ``ids``."""
    lo, hi = len(ids) * (part - 1) // parts, len(ids) * part // parts
    return ids[lo:hi]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", type=int, default=1)
    ap.add_argument("--parts", type=int, default=2)
    ap.add_argument("--out", default="/tmp/gpu_suite")
    ap.add_argument("--tests", default="tests/", help="where to collect (default: tests/)")
    args = ap.parse_args(argv)
    if args.parts < 1 or not 1 <= args.part <= args.parts:
        print(f"gpu_suite: --part {args.part} is not in 1..{args.parts}", file=sys.stderr)
        return 2
    nets = Path(".nets")
    if "LC0PY_TEST_NETS" not in os.environ and nets.is_dir():
        os.environ["LC0PY_TEST_NETS"] = str(nets.resolve())
    collector = _Collector()
    with contextlib.redirect_stdout(io.StringIO()):
        pytest.main(["-m", "gpu", "--collect-only", "-p", "no:cacheprovider", args.tests],
                    plugins=[collector])
    ids = part_ids(collector.ids, args.part, args.parts)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = out / f"gpu_suite_{args.part}of{args.parts}.txt"
    print(f"gpu_suite: part {args.part} of {args.parts}: {len(ids)} of {len(collector.ids)} GPU tests")
    with log.open("w") as f:
        f.write(f"part {args.part} of {args.parts}: {len(ids)} of {len(collector.ids)} GPU tests\n")
        f.writelines(i + "\n" for i in ids)
    if not ids:
        return 5
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        status = pytest.main(["-m", "gpu", "-p", "no:cacheprovider", *ids])
    with log.open("a") as f:
        f.write(buf.getvalue())
    print(buf.getvalue().strip().splitlines()[-1] if buf.getvalue().strip() else "(no output)")
    return int(status)


if __name__ == "__main__":
    sys.exit(main())
