#!/usr/bin/env python
"""Legal moves + policy indices per position: the search's generator vs python-chess's.

Times ``lc0py.search.movegen.legal_moves_indexed`` (packed ints) against
``lc0py.chess.policy.legal_moves_with_indices`` (python-chess ``Move`` objects) on lc0's
benchmark positions; prints microseconds per position.

    python scripts/bench_movegen.py
"""

from __future__ import annotations

import timeit

from lc0py.chess.history import PositionHistory
from lc0py.chess.policy import legal_moves_with_indices
from lc0py.search.movegen import legal_moves_indexed
from lc0py.tools.benchmark import POSITIONS, split_position


def main() -> None:
    boards = []
    for text in POSITIONS:
        fen, moves = split_position(text)
        boards.append(PositionHistory.from_fen(fen, moves).board)
    n = 200
    ours = min(timeit.repeat(lambda: [legal_moves_indexed(b, 0) for b in boards], number=n, repeat=3))
    ref = min(timeit.repeat(lambda: [legal_moves_with_indices(b, 0) for b in boards], number=n, repeat=3))
    count = sum(len(list(b.legal_moves)) for b in boards)
    per = 1e6 / (n * len(boards))
    print(f"{len(boards)} positions, {count / len(boards):.1f} legal moves on average")
    print(f"search movegen (packed ints): {ours * per:6.1f} us/position")
    print(f"python-chess + indices:       {ref * per:6.1f} us/position  ({ref / ours:.2f}x)")


if __name__ == "__main__":
    main()
