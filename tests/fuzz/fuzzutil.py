"""Shared pieces of the seeded fuzz suite: case seeds, counts, and failure messages with the seed.

Every case is derived from one integer seed (``case_seeds``), so a failure message names the seed
and ``LC0PY_FUZZ_SEED=<seed>`` replays exactly that case (``LC0PY_FUZZ_SEED`` set: only that seed
runs). The default run is small and fixed (deterministic in CI); ``@pytest.mark.slow`` variants
run ``SLOW_FACTOR`` times as many cases from another base seed.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Iterator

SLOW_FACTOR = 10
ENV_SEED = "LC0PY_FUZZ_SEED"


def case_seeds(base: int, count: int) -> Iterator[int]:
    """``count`` case seeds from ``base`` (or only ``$LC0PY_FUZZ_SEED`` when it is set)."""
    forced = os.environ.get(ENV_SEED)
    if forced:
        yield int(forced)
        return
    rng = random.Random(base)
    for _ in range(count):
        yield rng.getrandbits(48)


def tally_cases(base: int, count: int, case: Callable[[int], str]) -> dict[str, int]:
    """Run ``case`` on each of ``case_seeds(base, count)``; how many cases had each outcome."""
    seen: dict[str, int] = {}
    for seed in case_seeds(base, count):
        outcome = case(seed)
        seen[outcome] = seen.get(outcome, 0) + 1
    return seen


def failure(what: str, seed: int, detail: str) -> str:
    return f"{what} failed for seed {seed} (replay: {ENV_SEED}={seed}): {detail}"
