#!/usr/bin/env python
"""Push + encode + pop per leaf, per input format: what the search pays to encode one new leaf.

Moved out of the test suite (a wall-clock assertion there turned CI red on a loaded machine):
this prints microseconds per push+encode+pop, median of repeats, for formats 1, 3 and 5.

    python scripts/bench/bench_encoding.py
"""

from __future__ import annotations

import statistics
import timeit

from lc0py.chess.history import PositionHistory


def main() -> None:
    h = PositionHistory.from_fen(
        None, ["e2e4", "e7e5", "g1f3", "b8c6", "f1b5", "a7a6", "b5a4", "g8f6", "e1g1", "f8e7"]
    )
    moves = list(h.board.legal_moves)
    n = 300
    for fmt in (1, 3, 5):
        h.encode(fmt)

        def leaf_cycle(fmt: int = fmt) -> None:
            for i in range(n):
                h.push(moves[i % len(moves)])
                h.encode(fmt)
                h.pop()

        runs = timeit.repeat(leaf_cycle, number=1, repeat=7)
        per_us = statistics.median(runs) / n * 1e6
        print(f"input format {fmt}: {per_us:.1f} µs per push+encode+pop (median of 7)")


if __name__ == "__main__":
    main()
