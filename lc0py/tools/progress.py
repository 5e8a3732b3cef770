"""A progress bar for long jobs: ``with progress(total, "eval") as bar: bar.update(n)``.

tqdm draws it on stderr when stderr is a terminal (``enabled=None``), never into JSON on stdout;
``enabled=False`` (or no tqdm installed) gives a reporter that only counts.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class Reporter:
    """Counts units of work and moves the bar (if any)."""

    def __init__(self, bar: Any = None) -> None:
        self._bar = bar
        self.count = 0

    def update(self, n: int = 1) -> None:
        self.count += n
        if self._bar is not None:
            self._bar.update(n)


@contextmanager
def progress(
    total: int | None, desc: str, unit: str = "pos", enabled: bool | None = None
) -> Iterator[Reporter]:
    """A :class:`Reporter` over ``total`` units (``None``: unknown) labelled ``desc``."""
    if enabled is None:
        enabled = sys.stderr.isatty()
    bar = None
    if enabled:
        try:
            from tqdm import tqdm
        except ImportError:  # pragma: no cover - tqdm is a dependency
            tqdm = None
        if tqdm is not None:
            bar = tqdm(
                total=total, desc=desc, unit=unit, unit_scale=True, file=sys.stderr, dynamic_ncols=True
            )
    try:
        yield Reporter(bar)
    finally:
        if bar is not None:
            bar.close()
