"""lc0's backendbench statistics on hand-computed examples."""

from __future__ import annotations

import math

import pytest

from lc0py.tools.bench_stats import HEADER, compute_stats, header_due


def test_single_thread_example() -> None:
    # start 10.0; completions 10.5 (first batch, not a sample), then intervals 0.1, 0.3, 0.2, 0.2
    s = compute_stats(8, 10.0, [[10.5, 10.6, 10.9, 11.1, 11.3]])
    assert s.samples == 4
    assert s.nps == pytest.approx(8 * 4 / 0.8)
    assert s.mean_ms == pytest.approx(200.0)
    sd = math.sqrt(((100 - 200) ** 2 + (300 - 200) ** 2 + 0 + 0) / 3)
    assert s.sdev_ms == pytest.approx(sd)
    assert s.cv == pytest.approx(sd / 200.0)
    assert s.max_nps == pytest.approx(80.0)
    assert s.min_nps == pytest.approx(8 / 0.3)
    assert s.median_nps == pytest.approx(2 * 8 / (0.2 + 0.2))  # even count: mean of the middle two
    assert s.first_max_ms == pytest.approx(500.0)
    assert s.first_mean_ms == pytest.approx(500.0)


def test_odd_median_and_two_threads() -> None:
    s = compute_stats(4, 0.0, [[1.0, 1.2, 1.6], [1.5, 2.5]])
    # samples (divided by 2 threads): 0.1, 0.2, 0.5
    assert s.samples == 3
    assert s.median_nps == pytest.approx(4 / 0.2)
    assert s.nps == pytest.approx(4 * 3 / 0.8)
    assert s.first_max_ms == pytest.approx(1000.0)  # gaps: 1.0 (from start), 0.5
    assert s.first_mean_ms == pytest.approx(1500.0 / 2)


def test_single_batch_uses_first_time() -> None:
    s = compute_stats(2, 0.0, [[0.25]])
    assert s.samples == 1 and s.mean_ms == pytest.approx(250.0) and s.sdev_ms == 0.0


def test_row_format() -> None:
    s = compute_stats(256, 0.0, [[0.0071020, 0.0071020 + 0.006195, 0.0071020 + 2 * 0.006195]])
    row = s.csv_row()
    assert row.startswith("  256,")
    fields = row.split(",")
    assert len(fields) == len(HEADER.split(","))
    assert [len(f) for f in fields] == [len(h) for h in HEADER.split(",")]
    assert fields[2].strip() == "6.195"  # lc0's %.4g
    assert fields[8].strip() == "7.1020"


def test_header_names_units() -> None:
    labels = [h.strip() for h in HEADER.split(",")]
    assert labels == ["size", "mean nps", "mean ms", "sdev ms", "cv", "max nps", "median nps", "min nps",
                      "first max ms", "first mean ms"]


def test_wide_values_stay_aligned() -> None:
    """A fast GPU (millions of nps) and a slow CPU (minutes a batch) both stay under the header."""
    fast = compute_stats(1024, 0.0, [[0.0004, 0.0008, 0.0013]])  # ~2.3M nps
    slow = compute_stats(1, 0.0, [[300.0, 900.0, 1250.0]])  # minutes a batch, first batch 300 s
    header = [len(h) for h in HEADER.split(",")]
    for s in (fast, slow):
        assert [len(f) for f in s.csv_row().split(",")] == header


def test_header_schedule() -> None:
    assert [header_due(i, False) for i in (0, 1, 31, 32, 64)] == [True, False, False, True, True]
    assert [header_due(i, True) for i in (0, 32)] == [True, False]


def test_refuses_empty() -> None:
    with pytest.raises(ValueError):
        compute_stats(1, 0.0, [[]])


def test_small_rates_keep_digits() -> None:
    """CPU backends on T82 run at a few positions a second: the row must not say 0 or 1."""
    s = compute_stats(1, 0.0, [[0.0, 0.4, 0.8]])  # 2.5 nps
    fields = s.csv_row().split(",")
    assert fields[1].strip() == "2.5" and fields[5].strip() == "2.5"
    assert [len(f) for f in fields] == [len(h) for h in HEADER.split(",")]
