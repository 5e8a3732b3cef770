"""Fixtures of the UCI tests: engine subprocesses (``tests.uci.process.UciProcess``), the tiny net."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.uci.process import HANG_GUARD_S, ROOT, UciProcess

__all__ = ["HANG_GUARD_S", "UciProcess", "engine_factory", "tiny_weights"]

TINY = ROOT / "weights" / "tiny-seed1.pb.gz"


@pytest.fixture
def engine_factory():  # type: ignore[no-untyped-def]
    procs: list[UciProcess] = []

    def make(*args: str) -> UciProcess:
        p = UciProcess(*args)
        procs.append(p)
        return p

    yield make
    for p in procs:
        p.close()


@pytest.fixture(scope="session")
def tiny_weights() -> Path:
    if not TINY.exists():
        pytest.skip("weights/tiny-seed1.pb.gz not present")
    return TINY
