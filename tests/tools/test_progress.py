"""The one progress reporter: on a terminal (or forced) it draws on stderr, else it is silent."""

from __future__ import annotations

import io

import pytest

from lc0py.tools.progress import ENV_PROGRESS, progress, progress_enabled


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_forced_reporter_draws_counts_and_postfix() -> None:
    out = io.StringIO()
    with progress(total=5, desc="eval", unit="pos", enabled=True, stream=out) as bar:
        for _ in range(5):
            bar.update()
        bar.set_postfix(nps="123")
        bar.update(0)
    text = out.getvalue()
    assert bar.count == 5 and bar.enabled
    assert "eval" in text and "5/5" in text and "pos" in text


def test_silent_when_not_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_PROGRESS, raising=False)
    out = io.StringIO()
    with progress(total=3, desc="tune", stream=out) as bar:
        bar.update(3)
        bar.set_postfix(best="x")
        bar.write("a line")
    assert out.getvalue() == "" and bar.count == 3 and not bar.enabled


def test_terminal_draws_by_default_and_env_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_PROGRESS, raising=False)
    assert progress_enabled(None, _Tty()) is True
    assert progress_enabled(None, io.StringIO()) is False
    monkeypatch.setenv(ENV_PROGRESS, "0")
    assert progress_enabled(None, _Tty()) is False
    monkeypatch.setenv(ENV_PROGRESS, "1")
    assert progress_enabled(None, io.StringIO()) is True
    assert progress_enabled(False, io.StringIO()) is False  # the caller's word wins


def test_unknown_total_is_a_counter() -> None:
    out = io.StringIO()
    with progress(total=None, desc="eval", enabled=True, stream=out) as bar:
        bar.update(7)
    assert "7pos" in out.getvalue().replace(" ", "")


def test_default_stream_is_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    with progress(total=2, desc="bench", enabled=True) as bar:
        bar.update(2)
    captured = capsys.readouterr()
    assert captured.out == "" and "bench" in captured.err
