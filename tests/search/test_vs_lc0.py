"""lc0py's search against lc0 0.32.1's own binary (issue 10 item 5): root visit distributions.

Both engines search the same LINEAR16 net with Threads=1, SmartPruningFactor=0, MaxPrefetch=0,
``go nodes N`` from a fresh game, and print VerboseMoveStats; lc0py also gets SearchOverlap=false
(lc0 has no overlapped gathering on a CPU backend). Targets (the issue's): MinibatchSize=1 — same
best move on >= 97 % of the cases and L1 of the visit shares <= 0.02 on >= 90 %; MinibatchSize 32
and 256 — same best move on >= 90 % and median L1 <= 0.05.

The default run uses ``QUICK`` (8 positions of every kind × 250 and 400 nodes: at 100 nodes one
visit moved is already L1 0.02, and lc0 ending at N+1 — rule 4 — costs 0.01 of that); the full set
(20 positions × 100/800/3200, the set measured in docs/search-vs-lc0.md) is ``slow``. A 10-ply
game with tree reuse checks that visits stay close when both engines keep their trees between
moves. The compiled search core follows lc0's
``PickNodesToExtendTask`` / ``GatherMinibatch`` (rules 4 and 5 in docs/search-vs-lc0.md), so the
quick MinibatchSize 32/256 and game checks are plain assertions, and so are the full slow sets since
they were measured on the new core (all targets met at MinibatchSize 1, 32 and 256).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lc0py.tools.lc0_binary import find_lc0_binary
from lc0py.tools.search_fidelity import (
    QUICK,
    CaseResult,
    format_row,
    format_summary,
    run_fidelity,
    run_game_fidelity,
    select,
    summarise,
)

ROOT = Path(__file__).resolve().parents[2]
NET = ROOT / "weights" / "tiny-seed1.pb.gz"
LC0 = find_lc0_binary()

pytestmark = [
    pytest.mark.oracle,
    pytest.mark.skipif(LC0 is None, reason="lc0's binary not installed (dev extra)"),
]

def _run(positions: list, nodes: tuple[int, ...], minibatch: int) -> list[CaseResult]:
    assert LC0 is not None
    return run_fidelity(LC0, NET, positions, nodes, [minibatch])


def _explain(results: list[CaseResult], minibatch: int) -> str:
    return format_summary(summarise(results, minibatch)) + "\n" + "\n".join(format_row(r) for r in results)


def _assert_mb1(results: list[CaseResult]) -> None:
    s = summarise(results, 1)
    assert s.cases == len(results) > 0
    assert s.same_best_rate >= 0.97, _explain(results, 1)
    assert s.l1_small_rate >= 0.90, _explain(results, 1)


def _assert_batched(results: list[CaseResult], minibatch: int) -> None:
    s = summarise(results, minibatch)
    assert s.cases == len(results) > 0
    assert s.same_best_rate >= 0.90, _explain(results, minibatch)
    assert s.median_l1 <= 0.05, _explain(results, minibatch)


QUICK_NODES = (250, 400)


def test_minibatch_1_follows_lc0() -> None:
    _assert_mb1(_run(select(QUICK), QUICK_NODES, 1))


@pytest.mark.parametrize("minibatch", [32, 256])
def test_batched_search_follows_lc0(minibatch: int) -> None:
    _assert_batched(_run(select(QUICK), (400,), minibatch), minibatch)


@pytest.fixture(scope="module")
def game_cases() -> list[CaseResult]:
    """10 plies of one game at 300 nodes a move, trees kept between moves (both play lc0's move)."""
    assert LC0 is not None
    return run_game_fidelity(LC0, NET, plies=10, nodes=300)


def test_tree_reuse_in_a_game_keeps_visits_close(game_cases: list[CaseResult]) -> None:
    s = summarise(game_cases, 1)
    assert s.cases == 10
    assert s.l1_small_rate >= 0.90, _explain(game_cases, 1)


TIE_AFTER_OVERSHOOT = (
    "rule 4 of docs/search-vs-lc0.md: at ply 3 lc0 ends at 301 visits and its extra visit breaks a tie "
    "(a7a6 over b8a6) that lc0py, stopping at 300, breaks the other way"
)


def test_tree_reuse_in_a_game_same_best_moves(game_cases: list[CaseResult]) -> None:
    s = summarise(game_cases, 1)
    assert s.same_best_rate >= 0.97, _explain(game_cases, 1)


FULL_NODES = (100, 800, 3200)


@pytest.mark.slow
def test_minibatch_1_follows_lc0_full() -> None:
    _assert_mb1(_run(select(None), FULL_NODES, 1))


@pytest.mark.slow
@pytest.mark.parametrize("minibatch", [32, 256])
def test_batched_search_follows_lc0_full(minibatch: int) -> None:
    """Measured on the compiled core: 59/60 and 58/60 same best move, median L1 0.000."""
    _assert_batched(_run(select(None), FULL_NODES, minibatch), minibatch)


@pytest.mark.slow
@pytest.mark.xfail(strict=False, reason="lc0py's default SearchOverlap=true gathers the next minibatch while "
                   "the backend evaluates, with the tree not yet updated; lc0 has no such overlap on a CPU "
                   "backend (measured 55/60 same best move, L1 <= 0.02 on 23/60: docs/search-vs-lc0.md)")
def test_minibatch_1_as_shipped_follows_lc0() -> None:
    """lc0py given only lc0's own options (SearchOverlap left at its default)."""
    assert LC0 is not None
    _assert_mb1(run_fidelity(LC0, NET, select(None), (100, 400, 1600), [1], lc0py_options={}))
