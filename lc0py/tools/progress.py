"""The one progress reporter of every long command (``eval --positions``, ``tune``,
``backendbench``, ``attnbench``, the evaluation job).

    with progress(total=len(positions), desc="eval") as bar:
        for batch in batches:
            ...
            bar.update(len(batch))
            bar.set_postfix(nps=f"{nps:.0f}")

It writes to stderr only (stdout stays the command's result, so ``--json`` output is never mixed
with it), and only on a terminal: piped or logged stderr gets nothing unless forced, by
``enabled=True`` or the environment (``LC0PY_PROGRESS=1`` forces it on, ``=0`` off). It is tqdm
underneath (rate, elapsed and remaining time, redrawn in place at most ~10 times a second), so the
commands share one look and none carries its own carriage-return code.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from tqdm import tqdm

ENV_PROGRESS = "LC0PY_PROGRESS"
"""``1``/``on`` forces the progress bar even when stderr is not a terminal; ``0``/``off`` hides it."""

_ON = {"1", "on", "true", "yes"}
_OFF = {"0", "off", "false", "no"}


def progress_enabled(enabled: bool | None = None, stream: TextIO | None = None) -> bool:
    """Whether a reporter draws: ``enabled`` if given, else ``$LC0PY_PROGRESS``, else whether the
    stream (stderr) is a terminal."""
    if enabled is not None:
        return enabled
    env = os.environ.get(ENV_PROGRESS, "").strip().lower()
    if env in _ON:
        return True
    if env in _OFF:
        return False
    stream = sys.stderr if stream is None else stream
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or stream-like object without a terminal
        return False


class Reporter:
    """A running progress bar: ``update(n)`` counts work done, ``set_postfix(k=v)`` shows the latest
    figures after the bar, ``write(line)`` prints a line above it without breaking the bar. A
    disabled reporter accepts the same calls and prints nothing."""

    def __init__(self, bar: Any) -> None:
        self._bar = bar
        self._enabled = not bar.disable  # tqdm sets ``disable`` on close; the reporter keeps its word
        self.count = 0
        """Units counted so far (also when the bar is not drawn)."""

    @property
    def enabled(self) -> bool:
        """Whether the bar is drawn."""
        return self._enabled

    def update(self, n: int = 1) -> None:
        """``n`` more units done."""
        self.count += n
        self._bar.update(n)
        if self.enabled and self._bar.total is not None and self.count >= self._bar.total:
            self._bar.refresh()  # the last step is drawn even inside tqdm's redraw interval

    def set_postfix(self, **kv: Any) -> None:
        """Show ``key=value`` after the bar (the latest nps, the candidate being measured...)."""
        if self.enabled:
            self._bar.set_postfix(kv, refresh=False)

    def set_description(self, desc: str) -> None:
        """Replace the text before the bar (e.g. the batch size now being measured)."""
        if self.enabled:
            self._bar.set_description_str(desc, refresh=False)

    @contextmanager
    def suspended(self) -> Iterator[None]:
        """Around the command's own output on the same terminal (a result row on stdout): the bar
        is cleared first and redrawn after, so the two never share a line."""
        if not self.enabled or self._bar.disable:
            yield
            return
        self._bar.clear()
        try:
            yield
        finally:
            self._bar.refresh()

    def write(self, line: str) -> None:
        """Print ``line`` on the reporter's stream above the bar (only when the bar is drawn)."""
        if self.enabled and not self._bar.disable:
            self._bar.write(line, file=self._bar.fp)


@contextmanager
def progress(total: int | None, desc: str, unit: str = "pos", enabled: bool | None = None,
             stream: TextIO | None = None) -> Iterator[Reporter]:
    """A progress bar on stderr for the ``with`` block: ``total`` units expected (``None``:
    unknown, a counter with a rate), ``desc`` before the bar, ``unit`` after the counts.
    ``enabled``: ``None`` draws on a terminal only (see ``progress_enabled``). The bar is cleared
    when the block ends, so the command's own output follows on a clean line."""
    out = sys.stderr if stream is None else stream
    bar: Any = tqdm(total=total, desc=desc, unit=unit, file=out, leave=False,
                          disable=not progress_enabled(enabled, out), dynamic_ncols=True,
                          mininterval=0.1)
    try:
        yield Reporter(bar)
    finally:
        if not bar.disable:
            bar.refresh()  # the final counts, drawn once before the bar is cleared
        bar.close()
