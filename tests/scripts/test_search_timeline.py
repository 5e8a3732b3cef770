"""scripts/bench/search_timeline.py: the idle-gap arithmetic its report rests on."""

from __future__ import annotations

import pytest

pytest.importorskip("chess")
from scripts.bench.search_timeline import _gaps, _overlap, _padding, _union  # noqa: E402


def test_gaps_are_what_no_batch_covers_inside_each_search() -> None:
    flight = _union([(1.0, 2.0), (1.5, 3.0), (4.0, 5.0), (9.0, 12.0)])
    assert flight == [(1.0, 3.0), (4.0, 5.0), (9.0, 12.0)]
    searches = [(0.5, 6.0), (8.0, 10.0)]
    gaps = _gaps(searches, flight)
    assert gaps == [(0.5, 1.0), (3.0, 4.0), (5.0, 6.0), (8.0, 9.0)]
    # a search with a batch in flight all along has no gap; one with none is one gap
    assert _gaps([(1.2, 2.8)], flight) == []
    assert _gaps([(6.5, 7.5)], flight) == [(6.5, 7.5)]
    # what a phase spent in the gaps
    assert _overlap([(2.5, 4.5)], gaps) == pytest.approx(1.0)


def test_padding_is_the_share_of_run_rows_no_position_fills() -> None:
    # fine: 17 -> 20, 43 -> 48, 8 -> 8; coarse: 17 -> 32, 43 -> 48, 8 -> 8
    assert _padding([17, 43, 8], True) == pytest.approx((3 + 5) / (20 + 48 + 8))
    assert _padding([17, 43, 8], False) == pytest.approx((15 + 5) / (32 + 48 + 8))
    assert _padding([], True) == 0.0
