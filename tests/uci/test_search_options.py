"""Search options the compiled core acts on: Threads is refused above 1 (never silently ignored),
RamLimitMb reaches the search limits."""

from __future__ import annotations

import pytest

from lc0py.errors import UsageError
from lc0py.uci.options import Options


def test_threads_above_one_is_refused() -> None:
    o = Options()
    o.set("Threads", "1")
    with pytest.raises(UsageError, match="Threads"):
        o.set("Threads", "2")


def test_ram_limit_is_an_option() -> None:
    o = Options()
    o.set("RamLimitMb", "512")
    assert o["RamLimitMb"] == 512
    with pytest.raises(UsageError):
        o.set("RamLimitMb", "-1")
