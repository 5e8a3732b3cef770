"""The tools' integer flags (``--batches 50``, ``--batch-sizes 1,8,64``): one ``UsageError`` line each.

Flags are parsed here rather than by argparse so that a bad value is one ``lc0py:`` line.
"""

from __future__ import annotations

from lc0py.errors import UsageError


def int_value(flag: str, value: str | int | None, lo: int, hi: int) -> int | None:
    """``value`` of ``flag`` as an int in ``[lo, hi]`` (``None`` stays ``None``), else ``UsageError``."""
    if value is None:
        return None
    try:
        n = int(value)
    except ValueError:
        raise UsageError(f"{flag} '{value}' is not an integer") from None
    if not lo <= n <= hi:
        raise UsageError(f"{flag} {n} is out of range [{lo}, {hi}]")
    return n


def int_list(flag: str, text: str, lo: int, hi: int) -> list[int]:
    """``"64,256"`` -> ``[64, 256]``, each in ``[lo, hi]``; empty items are skipped, no values is an error."""
    out = [int_value(flag, item.strip(), lo, hi) for item in text.split(",") if item.strip()]
    if not out:
        raise UsageError(f"{flag}: no values given")
    return [n for n in out if n is not None]
