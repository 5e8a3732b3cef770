"""Fixtures of the UCI tests: lc0py engine subprocesses (``devtools.lc0_binary.UciSession``, the
checkout's one UCI driver), the tiny net."""

from __future__ import annotations

from pathlib import Path

import pytest

from devtools.lc0_binary import HANG_GUARD_S, UciSession, lc0py_session

__all__ = ["HANG_GUARD_S", "ROOT", "engine_factory", "tiny_weights"]

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "weights" / "tiny-seed1.pb.gz"


@pytest.fixture
def engine_factory():  # type: ignore[no-untyped-def]
    sessions: list[UciSession] = []

    def make(*args: str) -> UciSession:
        session = lc0py_session(*args, cwd=ROOT)
        sessions.append(session)
        return session

    yield make
    for session in sessions:
        session.close()


@pytest.fixture(scope="session")
def tiny_weights() -> Path:
    if not TINY.exists():
        pytest.skip("weights/tiny-seed1.pb.gz not present")
    return TINY
