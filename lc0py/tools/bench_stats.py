"""Statistics of one ``backendbench`` batch size, exactly as lc0 master computes them.

The text output keeps lc0's ten CSV columns in lc0's order; their labels carry the unit (``ms``,
``nps``) and every row is aligned under the header (``--json`` is the machine-readable form).

Pure functions (no clock, no I/O) so they are unit-tested; ``lc0py.tools.backendbench`` feeds
them the completion times it measured (docs/uci-and-tools.md §1, lc0 ``src/tools/backendbench.cc``).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

# lc0's ten columns in lc0's order, each labelled with its unit and given a fixed width that holds
# the widest value a real run prints (millions of nps on a GPU, minutes per batch on a CPU), so the
# streamed rows stay under their header: (label, width)
COLUMNS = (
    ("size", 5),
    ("mean nps", 10),
    ("mean ms", 10),
    ("sdev ms", 12),
    ("cv", 7),
    ("max nps", 10),
    ("median nps", 11),
    ("min nps", 10),
    ("first max ms", 13),
    ("first mean ms", 14),
)
HEADER = ",".join(f"{label:>{width}}" for label, width in COLUMNS)


def _cells(values: tuple[str, ...]) -> str:
    return ",".join(f"{value:>{width}}" for value, (_, width) in zip(values, COLUMNS, strict=True))


def format_nps(nps: float) -> str:
    """lc0 prints nodes per second as whole numbers; below 100 (CPU backends on big nets) that
    hides everything (``1``, even ``0``), so small rates keep three significant digits."""
    return f"{nps:.0f}" if nps >= 100 else f"{nps:.3g}"


@dataclass(frozen=True)
class BatchStats:
    """One CSV row: throughput in positions (nodes) per second, times in milliseconds."""

    size: int
    nps: float
    mean_ms: float
    sdev_ms: float
    cv: float
    max_nps: float
    median_nps: float
    min_nps: float
    first_max_ms: float
    first_mean_ms: float
    samples: int

    def csv_row(self) -> str:
        """The row under ``HEADER``: each value right-aligned in its column (lc0's number formats:
        whole nps, 4 significant digits for the mean time, 4 decimals for the rest)."""
        return _cells((
            str(self.size), format_nps(self.nps), f"{self.mean_ms:.4g}", f"{self.sdev_ms:.4f}",
            f"{self.cv:.4f}", format_nps(self.max_nps), format_nps(self.median_nps),
            format_nps(self.min_nps), f"{self.first_max_ms:.4f}", f"{self.first_mean_ms:.4f}",
        ))

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


def compute_stats(size: int, start: float, completions: list[list[float]]) -> BatchStats:
    """Statistics for batch size ``size``.

    ``start``: clock (seconds) when this size started; ``completions[k]``: completion times
    (seconds, increasing) of thread ``k``'s batches. The samples are the intervals between
    consecutive completions of a thread, divided by the number of threads (a thread's first
    batch is not a sample); ``first max`` is the largest gap between successive threads'
    first completions counted from ``start``, ``first mean`` = (last first completion - start) /
    threads. A run with a single batch (no interval) uses that batch's time as its one sample.
    """
    threads = len(completions)
    if threads == 0 or any(not c for c in completions):
        raise ValueError("every thread needs at least one completed batch")
    samples = [
        (b - a) / threads for times in completions for a, b in zip(times, times[1:], strict=False)
    ]
    firsts = sorted(times[0] for times in completions)
    if not samples:
        samples = [(firsts[-1] - start) / threads]
    n = len(samples)
    total = sum(samples)
    mean = total / n
    sdev = math.sqrt(sum((t - mean) ** 2 for t in samples) / (n - 1)) if n > 1 else 0.0
    ordered = sorted(samples)
    if n % 2:
        median_nps = size / ordered[n // 2]
    else:
        median_nps = 2 * size / (ordered[n // 2 - 1] + ordered[n // 2])
    gaps = [b - a for a, b in zip([start, *firsts], firsts, strict=False)]
    return BatchStats(
        size=size,
        nps=size * n / total,
        mean_ms=1000.0 * mean,
        sdev_ms=1000.0 * sdev,
        cv=sdev / mean if mean > 0 else 0.0,
        max_nps=size / ordered[0],
        median_nps=median_nps,
        min_nps=size / ordered[-1],
        first_max_ms=1000.0 * max(gaps),
        first_mean_ms=1000.0 * (firsts[-1] - start) / threads,
        samples=n,
    )


def header_due(index: int, header_only_once: bool) -> bool:
    """Whether the header precedes the ``index``-th size (0-based): first, then every 32 sizes."""
    return index == 0 if header_only_once else index % 32 == 0
