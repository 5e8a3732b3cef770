"""The tools' list-valued flags (``--batch-sizes 1,8,64``): one ``UsageError`` line on bad input."""

from __future__ import annotations

from lc0py.errors import UsageError


def int_list(flag: str, text: str, lo: int, hi: int) -> list[int]:
    """``"64,256"`` -> ``[64, 256]``, each in ``[lo, hi]``; empty items are skipped, no values is an error."""
    out = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        try:
            n = int(item)
        except ValueError:
            raise UsageError(f"{flag}: '{item}' is not an integer") from None
        if not lo <= n <= hi:
            raise UsageError(f"{flag}: {n} is out of range [{lo}, {hi}]")
        out.append(n)
    if not out:
        raise UsageError(f"{flag}: no values given")
    return out
