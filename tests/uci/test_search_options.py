"""Search options the compiled core acts on: Threads (lc0's range) reaches the search parameters,
RamLimitMb reaches the search limits."""

from __future__ import annotations

import pytest

from lc0py.errors import UsageError
from lc0py.search.params import SearchParams
from lc0py.uci.options import Options, build_table


def test_threads_takes_lc0s_range_and_reaches_the_search() -> None:
    o = Options()
    for value in (0, 1, 4, 128):
        o.set("Threads", str(value))
        assert o.search_params().threads == value
    for bad in ("-1", "129", "two"):
        with pytest.raises(UsageError, match="Threads"):
            o.set("Threads", bad)


def test_ram_limit_is_an_option() -> None:
    o = Options()
    o.set("RamLimitMb", "512")
    assert o["RamLimitMb"] == 512
    with pytest.raises(UsageError):
        o.set("RamLimitMb", "-1")


def test_option_defaults_are_the_search_params_defaults() -> None:
    """lc0's search defaults are written once (``SearchParams``): the option table takes them."""
    defaults = SearchParams()
    for spec in build_table():
        if spec.param is not None:
            assert spec.default == getattr(defaults, spec.param), spec.name
    assert Options().search_params() == defaults
