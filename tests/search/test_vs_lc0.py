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

from devtools.lc0_binary import MoveStats, RootStats, find_lc0_binary
from devtools.search_fidelity import (
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


def _tie_broken_by_overshoot(r: CaseResult) -> bool:
    """TIE_AFTER_OVERSHOOT: the root totals differ by exactly rule 4's extra visit, and the two
    best moves are within one visit of each other in both engines' counts. lc0 itself makes that
    visit at ply 3 in some runs and not in others (300 or 301 there, seen in CI), so such a case
    says which engine got the visit, not whether the trees agree."""
    if abs(r.lc0.root_n - r.lc0py.root_n) != 1 or r.lc0.bestmove is None or r.lc0py.bestmove is None:
        return False
    a, b = r.lc0.bestmove, r.lc0py.bestmove
    return all(abs(st.visits.get(a, 0) - st.visits.get(b, 0)) <= 1 for st in (r.lc0, r.lc0py))


def test_only_a_tie_the_extra_visit_breaks_is_excused() -> None:
    def case(lc0: dict[str, int], lc0py: dict[str, int]) -> CaseResult:
        def stats(v: dict[str, int]) -> RootStats:
            moves = {m: MoveStats(m, n, 0, 0.5) for m, n in v.items()}
            return RootStats(moves, sum(v.values()), max(v, key=lambda m: v[m]))

        return CaseResult("p", 300, 1, stats(lc0), stats(lc0py))

    assert _tie_broken_by_overshoot(case({"b8a6": 150, "a7a6": 150}, {"b8a6": 150, "a7a6": 151}))
    assert not _tie_broken_by_overshoot(case({"b8a6": 150, "a7a6": 149}, {"b8a6": 140, "a7a6": 160}))
    assert not _tie_broken_by_overshoot(case({"b8a6": 151, "a7a6": 149}, {"b8a6": 149, "a7a6": 151}))


def test_tree_reuse_in_a_game_same_best_moves(game_cases: list[CaseResult]) -> None:
    s = summarise(game_cases, 1)
    excused = sum(not r.same_best and _tie_broken_by_overshoot(r) for r in game_cases)
    assert (s.same_best + excused) / s.cases >= 0.97, _explain(game_cases, 1)


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
