"""A first start (issue 26 item 3): ``uciok`` comes at once while the search core compiles in the
background, and ``quit`` during that compile ends the engine cleanly. (The ``info string`` said
while ``isready`` waits for a first compile: ``tests/search/test_warmup.py``; waiting here for a
whole compile would put one inside a hang guard.)"""

from __future__ import annotations

from pathlib import Path

from devtools.lc0_binary import lc0py_session


def test_uciok_before_the_core_is_compiled(tmp_path: Path) -> None:
    cache = tmp_path / "numba"  # empty: this engine compiles the core from scratch
    with lc0py_session("--backend", "random", cwd=tmp_path, env={"LC0PY_NUMBA_CACHE": str(cache)}) as engine:
        engine.send("uci")
        engine.expect(lambda line: line == "uciok")
        assert not list(cache.glob("core-*/warm")), "uciok waited for the compile"
        engine.send("quit")
        assert engine.wait() == 0
        assert not any("Traceback" in line for line in engine.stderr)
