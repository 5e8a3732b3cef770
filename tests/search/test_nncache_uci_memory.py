"""``setoption name NNCacheSize value 999999999`` (lc0's maximum) in a running engine costs memory
only as the cache fills (issue 30 item 4; it allocated 7.45 GiB at once). Peak RSS: the engine's
own VmHWM (tests/peak_memory.py)."""

from __future__ import annotations

from pathlib import Path

from devtools.lc0_binary import lc0py_session
from tests.peak_memory import peak_rss_mb


def test_largest_nncache_size_allocates_on_demand(tmp_path: Path) -> None:
    cache = {"LC0PY_CACHE_DIR": str(tmp_path / "cache")}
    engine = lc0py_session("--backend", "random", cwd=tmp_path, env=cache)
    try:
        engine.send("setoption name NNCacheSize value 999999999")
        engine.send("position startpos moves e2e4")
        engine.send("go nodes 2000")
        engine.expect(lambda line: line.startswith("bestmove"))
        engine.send("isready")
        engine.expect(lambda line: line == "readyok")
        peak_mb = peak_rss_mb(engine.proc.pid)
        engine.send("quit")
    finally:
        engine.close()
    assert peak_mb < 1024, f"engine peak RSS {peak_mb:.0f} MB with NNCacheSize 999999999"
