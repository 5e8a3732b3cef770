"""Through python-chess (``chess.engine``), as its users drive lc0py (issue 29 items 1 and 2):

* a net that cannot load (a missing file, or none found by ``<autodiscover>``) ends in an
  exception (the engine exits with status 1 at the ``go`` it cannot search), never a hang;
* ``quit`` after python-chess's usual sequence (``Threads 1``, ``ucinewgame``, two searches)
  exits with status 0 on every CPU backend (it aborted with onnx-cpu).

python-chess's own ``timeout`` is the hang guard; nothing compiles inside it (the core is loaded
first; a net that does not load never reaches the search)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import chess
import chess.engine
import pytest

from devtools.lc0_binary import HANG_GUARD_S
from lc0py.search.warmup import warm_up

ROOT = Path(__file__).resolve().parents[2]


def _command(*args: str) -> list[str]:
    return [sys.executable, "-m", "lc0py", *args]


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""), **extra}


def _popen(args: list[str], cwd: Path, env: dict[str, str]) -> chess.engine.SimpleEngine:
    return chess.engine.SimpleEngine.popen_uci(args, timeout=HANG_GUARD_S, cwd=cwd, env=env)


def test_missing_net_raises_instead_of_hanging(tmp_path: Path) -> None:
    engine = _popen(_command("-w", str(tmp_path / "nope.pb.gz"), "-b", "numpy"), tmp_path, _env())
    try:
        with pytest.raises(chess.engine.EngineTerminatedError):
            engine.play(chess.Board(), chess.engine.Limit(nodes=1))
    finally:
        engine.close()


def test_no_net_found_raises_instead_of_hanging(tmp_path: Path) -> None:
    """Plain ``lc0py``: ``<autodiscover>`` finds nothing (empty data folders)."""
    empty = tmp_path / "empty"
    empty.mkdir()
    env = _env(HOME=str(empty), XDG_DATA_HOME=str(empty), XDG_DATA_DIRS=str(empty),
               XDG_CONFIG_HOME=str(empty), XDG_CONFIG_DIRS=str(empty), LC0PY_CACHE_DIR=str(empty / "cache"))
    engine = _popen(_command("-b", "numpy"), empty, env)
    try:
        with pytest.raises(chess.engine.EngineTerminatedError):
            engine.play(chess.Board(), chess.engine.Limit(time=0.1))
    finally:
        engine.close()


def _backends() -> list[str]:
    names = ["numpy", "random"]
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return names
    return [*names, "onnx-cpu"]


@pytest.mark.parametrize("backend", _backends())
def test_quit_after_python_chess_sequence_is_clean(backend: str, tmp_path: Path, tiny_weights: Path) -> None:
    warm_up()  # the compiled core, before the guarded part
    env = _env(LC0PY_CACHE_DIR=str(tmp_path / "cache"))
    for _ in range(3):  # the abort came in 5 of 6 runs
        engine = _popen(_command("-w", str(tiny_weights), "-b", backend), tmp_path, env)
        engine.configure({"Threads": 1})
        board = chess.Board()
        game = object()  # one game: python-chess sends ucinewgame once
        for limit in (chess.engine.Limit(white_clock=2, black_clock=2, white_inc=0.1, black_inc=0.1),
                      chess.engine.Limit(white_clock=1.9, black_clock=1.9, white_inc=0.1, black_inc=0.1)):
            result = engine.play(board, limit, game=game)
            assert result.move in board.legal_moves
            board.push(result.move)
        engine.quit()
        assert engine.returncode.result(HANG_GUARD_S) == 0
