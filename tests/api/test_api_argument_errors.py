"""API argument errors are ``Lc0pyError``s (and still ``ValueError``s) with one-line messages
(issue 30 item 6): a NUL in the weights path, ``temperature`` <= 0 or NaN."""

from __future__ import annotations

from pathlib import Path

import chess
import pytest

import lc0py
from lc0py.errors import ArgumentError, Lc0pyError, one_line

TINY = Path(__file__).resolve().parents[2] / "weights" / "tiny-seed1.pb.gz"


def test_nul_in_the_path_is_an_lc0py_error(tmp_path: Path) -> None:
    for path in (f"{tmp_path}/a\0b.pb.gz", Path(f"{tmp_path}/a\0b.pb.gz")):
        with pytest.raises(ArgumentError, match="NUL") as info:
            lc0py.load(path, backend="numpy")
        assert isinstance(info.value, Lc0pyError) and isinstance(info.value, ValueError)
        assert "\0" not in str(info.value)


@pytest.mark.parametrize("temperature", [0, -1.0, float("nan"), float("inf"), "x"])
def test_bad_temperature_is_an_lc0py_error(temperature: object) -> None:
    with lc0py.load(TINY, backend="numpy") as net:
        for call in (net.evaluate, net.trace):
            with pytest.raises(ArgumentError, match="temperature") as info:
                call(chess.Board(), temperature=temperature)  # type: ignore[arg-type]
            assert isinstance(info.value, Lc0pyError) and isinstance(info.value, ValueError)


def test_messages_are_one_printable_line() -> None:
    assert one_line("plain text é") == "plain text é"
    assert one_line("a\nb\x1b[31mc\td\0") == "a\\nb\\x1b[31mc\\td\\x00"
    assert str(Lc0pyError("x\ny")) == "x\\ny"
