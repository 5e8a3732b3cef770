"""A first start (issue 26 item 3): ``uciok`` comes at once while the search core compiles in the
background, and ``quit`` during that compile ends the engine cleanly. (The ``info string`` said
while ``isready`` waits for a first compile: ``tests/search/test_warmup.py``; waiting here for a
whole compile would put one inside a hang guard.)"""

from __future__ import annotations

from pathlib import Path

from tests.uci.process import HANG_GUARD_S, UciProcess


def test_uciok_before_the_core_is_compiled(tmp_path: Path) -> None:
    cache = tmp_path / "numba"  # empty: this engine compiles the core from scratch
    engine = UciProcess("--backend", "random", cwd=tmp_path, env={"LC0PY_NUMBA_CACHE": str(cache)})
    try:
        engine.send("uci")
        engine.expect(lambda line: line == "uciok")
        compiled = list(cache.glob("core-*/warm"))
        assert not compiled, "uciok waited for the compile"
        engine.send("quit")
        assert engine.proc.wait(HANG_GUARD_S) == 0
        assert engine.proc.stderr is not None
        assert "Traceback" not in engine.proc.stderr.read()
    finally:
        engine.close()
