"""``fastcall.Resolved``: the compiled core called through resolved entry points gives the same
results as the dispatcher, and every call site of a search keeps its argument types (the
contract the entry points rely on; ``CHECK`` re-types each call and raises otherwise)."""

from __future__ import annotations

import os

import chess
import numba
import numpy as np
import pytest

from lc0py.search import fastcall
from lc0py.search.core import arrays as A
from lc0py.search.fastcall import Resolved
from lc0py.search.params import SearchParams
from lc0py.search.search import SearchLimits

JIT = os.environ.get("NUMBA_DISABLE_JIT", "0") in ("", "0")


@numba.njit(cache=False)
def _weighted_sum(a: np.ndarray, w: float) -> float:
    s = 0.0
    for x in a:
        s += x * w
    return s


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> list[Resolved]:
    """Every ``Resolved`` made while the fixture is on, with ``CHECK`` on."""
    made: list[Resolved] = []
    original = Resolved.__init__

    def record(self: Resolved, dispatcher: object) -> None:
        original(self, dispatcher)  # type: ignore[arg-type]
        made.append(self)

    monkeypatch.setattr(Resolved, "__init__", record)
    monkeypatch.setattr(fastcall, "CHECK", True)
    return made


def test_resolved_call_matches_the_dispatcher(checked: list[Resolved]) -> None:
    rng = np.random.default_rng(7)
    call = Resolved(_weighted_sum)
    for _ in range(3):
        a = rng.standard_normal(17)
        w = float(rng.uniform(0.5, 2.0))
        assert call(a, w) == _weighted_sum(a, w)
    if JIT:
        assert call._entry is not _weighted_sum and call._key is not None


@pytest.mark.skipif(not JIT, reason="nothing is resolved without the JIT")
def test_changed_argument_types_are_caught(checked: list[Resolved]) -> None:
    call = Resolved(_weighted_sum)
    call(np.ones(4), 1.0)
    with pytest.raises(TypeError, match="argument types changed"):
        call(np.ones(4, np.float32), 1.0)


@pytest.mark.parametrize("minibatch", [1, 32, 0])
@pytest.mark.parametrize("overlap", [False, True])
def test_search_call_sites_keep_their_types(checked: list[Resolved], make_search, minibatch, overlap) -> None:
    only = [chess.Move.from_uci("e2e4"), chess.Move.from_uci("d2d4"), chess.Move.from_uci("g1f3")]
    params = SearchParams(minibatch_size=minibatch, overlap=overlap, noise_epsilon=0.25, random_seed=3)
    s = make_search(params=params, limits=SearchLimits(nodes=600, searchmoves=only, smart_pruning=False))
    s.run()
    s.join()
    assert s.error is None  # a call site that changed its types raises in the search thread
    assert s.playouts >= 600 and s.best_move()[0] in only
    used = [r for r in checked if r._entry is not None]
    assert len(used) >= 7  # gather, collisions, apply, backup, root stats, best edge, child
    if JIT:
        assert all(r._key is not None for r in used), [r._dispatcher for r in used if r._key is None]
    assert A.used_bytes(s.tree.arrays) > 0


def test_a_later_search_resolves_without_numba_typing(make_search, monkeypatch: pytest.MonkeyPatch) -> None:
    """Entry points are kept across searches by the arguments' signature: the call sites of a
    second search find them without typing their arguments (1.5 ms for the gather's alone)."""
    first = make_search(limits=SearchLimits(nodes=300, smart_pruning=False))
    first.run()
    first.join()
    if not JIT:
        return

    def no_typing(self: Resolved, args: tuple[object, ...]) -> tuple[object, ...]:
        raise AssertionError(f"typed again: {getattr(self._dispatcher, '__name__', '?')}")

    monkeypatch.setattr(Resolved, "_types", no_typing)
    again = make_search(limits=SearchLimits(nodes=300, smart_pruning=False))
    again.run()
    again.join()
    assert again.error is None and again.playouts >= 300
    assert (again.playouts, int(again.tree.arrays.n[again.root_id])) == (
        first.playouts,
        int(first.tree.arrays.n[first.root_id]),
    )


@pytest.mark.skipif(not JIT, reason="nothing is resolved without the JIT")
def test_arrays_numba_types_apart_get_their_own_entry_points() -> None:
    """A signature tells apart what numba's typing does (layout, dtype, writeability): an
    entry point compiled for a contiguous array is never reused for a strided one."""
    rng = np.random.default_rng(11)
    a = rng.standard_normal(40)
    frozen = a.copy()
    frozen.flags.writeable = False
    variants = [a, a[::2], a.astype(np.float32), frozen, a.reshape(5, 8)[:, 0]]
    sigs = {fastcall.signature((v, 1.0)) for v in variants}
    assert len(sigs) == len(variants) - 1  # the last two strided views type alike
    for v in variants:
        call = Resolved(_weighted_sum)
        assert call(v, 1.5) == pytest.approx(_weighted_sum(v, 1.5), rel=1e-6)
        assert call(v, 1.5) == _weighted_sum(v, 1.5)
    assert fastcall.signature((object(),)) is None  # not covered: typed by numba each search
