"""The first compile on two processes (``lc0py.search.precompile``): the helper process caches its
share with the very signatures the search uses, so the engine loads it instead of compiling it;
a missing, failing or hung helper only costs the parallelism.

The cold test compiles the core once into an empty cache folder (a minute or two on a loaded
2-core machine): in a fresh interpreter (numba's compiled signatures are per process) with numba's
compile events recorded, it checks which functions the engine compiled itself; then a second
fresh interpreter searches from that cache and must compile nothing at all. No clock is asserted
and nothing waits on a compile with a time limit (the engine's wait for the helper is unbounded
in the test).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from lc0py.search import precompile

RECORD = """
import json, sys
from numba.core import event
compiled = []
class Listener(event.Listener):
    def on_start(self, ev):
        compiled.append(ev.data["dispatcher"].py_func.__qualname__)
    def on_end(self, ev):
        pass
event.register("numba:compile", Listener())
"""

COLD = RECORD + textwrap.dedent(
    """
    from lc0py.search import precompile, warmup
    precompile.HELPER_WAIT_MIN = float("inf")  # no time limit on the helper here
    precompile._cpus = lambda: 2  # the helper runs on a one-CPU runner too
    started = []
    real_start = precompile.start_helper
    precompile.start_helper = lambda: started.append(1) or real_start()
    assert not warmup.is_cached()
    warmup.warm_up()
    print(json.dumps({"compiled": compiled, "started": len(started), "cached": warmup.is_cached()}))
    """
)

SEARCH = RECORD + textwrap.dedent(
    """
    from lc0py.search.core.nncache import NNCache
    from lc0py.search.core.tree import NodeTree
    from lc0py.search.params import SearchParams
    from lc0py.search.search import Search, SearchLimits
    from lc0py.search import warmup
    from lc0py.search.precompile import FlatBackend  # no compiled code of its own (unlike random)
    assert warmup.is_cached()
    warmup.warm_up()
    tree = NodeTree()
    tree.reset_to_position("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", ["e2e4"])
    search = Search(tree, FlatBackend(), SearchParams(minibatch_size=32, random_seed=1),
                    SearchLimits(nodes=400), NNCache(20000))
    search.run()
    search.join()
    best, nodes = str(search.best_move()), search.playouts
    # the in-tree tablebase probe's calls (worker._probe_tablebase), as a probe makes them
    import numpy as np
    from lc0py.chess.core import board as B
    from lc0py.search.core import leaves as L
    from lc0py.search.worker import Batch
    w, root = search.worker, search.root_id
    batch = Batch(8)
    L.tb_probe_position(tree.arrays, root, root, w._positions, np.zeros(B.POS_WORDS, np.uint64))
    L.extend_picks(tree.arrays, root, batch.picks, 0, 0, w._positions, w.cache.arrays, w._use_cache,
                   w.params.two_fold_draws, w.input_format, w._fill, batch.kinds, batch.vals,
                   batch.requests, w.prm, False, w._extend_work)
    L.make_tablebase_terminal(tree.arrays, root, 0)
    print(json.dumps({"compiled": compiled, "best": best, "nodes": nodes}))
    """
)


def _python(script: str, cache: Path) -> dict[str, Any]:
    env = dict(os.environ, LC0PY_NUMBA_CACHE=str(cache))
    env.pop("NUMBA_DISABLE_JIT", None)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT") == "1", reason="numba's JIT is off")
def test_the_helper_share_is_loaded_not_compiled_and_the_cache_serves_a_search(tmp_path: Path) -> None:
    cache = tmp_path / "numba"
    cold = _python(COLD, cache)
    assert cold["started"] == 1 and cold["cached"]
    compiled = set(cold["compiled"])
    # the helper's share (its callees' signatures as gather_minibatch types them included) was
    # loaded from what the helper cached, never compiled here
    assert not compiled & {"extend_picks", "prefetch", "gen_legal", "encode"}, sorted(compiled)
    # ... while the engine did compile its own share and the rest (the test sees real compiles)
    assert {"pick_nodes", "gather_minibatch", "backup_batch"} <= compiled, sorted(compiled)
    warm = _python(SEARCH, cache)
    # everything a search needs was cached, the tablebase probe's path included
    assert warm["compiled"] == [], warm["compiled"]
    assert warm["nodes"] >= 400 and len(warm["best"]) >= 4


def test_no_helper_without_a_compiled_code_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    import lc0py.search.core.jit as jit

    monkeypatch.setattr(precompile, "_cpus", lambda: 2)
    monkeypatch.setattr(jit, "cache_folder", lambda: None)  # LC0PY_NUMBA_CACHE=off, nothing usable
    popen: list[Any] = []
    monkeypatch.setattr(precompile.subprocess, "Popen", lambda *a, **k: popen.append(a))
    assert precompile.start_helper() is None
    assert popen == []


def test_no_helper_on_one_cpu(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import lc0py.search.core.jit as jit

    monkeypatch.setattr(precompile, "_cpus", lambda: 1)
    monkeypatch.setattr(jit, "cache_folder", lambda: tmp_path)
    assert precompile.start_helper() is None


def test_the_helper_caches_into_the_engines_folder_and_stays_off_stdout(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The engine's folder is passed on resolved (a temporary fallback folder is shared too), and
    the helper's output never reaches the engine's stdout (the UCI stream)."""
    import lc0py.search.core.jit as jit
    import lc0py.storage.compiled as compiled

    monkeypatch.setenv("NUMBA_DISABLE_JIT", "0")
    monkeypatch.setattr(precompile, "_cpus", lambda: 2)
    monkeypatch.setattr(jit, "cache_folder", lambda: tmp_path / "core-x")
    monkeypatch.setattr(compiled, "numba_cache_root", lambda: tmp_path)
    calls: list[tuple[Any, dict[str, Any]]] = []

    class FakePopen:
        def __init__(self, args: Any, **kwargs: Any) -> None:
            calls.append((args, kwargs))

    stops: list[Any] = []
    monkeypatch.setattr(precompile.subprocess, "Popen", FakePopen)
    monkeypatch.setattr(precompile.atexit, "register", stops.append)
    helper = precompile.start_helper()
    assert helper is not None
    (args, kwargs), = calls
    assert args[1:4] == ["-m", "lc0py.search.precompile", str(os.getpid())]
    assert kwargs["env"][compiled.ENV] == str(tmp_path)
    assert kwargs["stdout"] == subprocess.DEVNULL and kwargs["stdin"] == subprocess.DEVNULL
    assert stops == [helper.stop]  # ended when the engine exits


def test_a_hung_helper_is_ended_and_the_engine_goes_on() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    helper = precompile.Helper(proc)
    assert helper.wait(0.2) is False
    assert proc.poll() is not None  # killed, not left behind


def test_a_failing_or_missing_helper_still_runs_the_warm_up(monkeypatch: pytest.MonkeyPatch) -> None:
    shares: list[str] = []
    monkeypatch.setattr(precompile, "compile_share", shares.append)
    ran: list[int] = []
    failing = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    monkeypatch.setattr(precompile, "start_helper", lambda: precompile.Helper(failing))
    precompile.compile_in_parallel(lambda: ran.append(1))
    assert shares == ["engine"] and ran == [1]
    monkeypatch.setattr(precompile, "start_helper", lambda: None)
    precompile.compile_in_parallel(lambda: ran.append(2))
    assert shares == ["engine"] and ran == [1, 2]  # no helper: everything in the warm-up


def test_an_unknown_share_is_refused() -> None:
    with pytest.raises(ValueError, match="share 'other'"):
        precompile.compile_share("other")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_the_helper_ends_with_the_engine(tmp_path: Path) -> None:
    """A helper whose engine was killed mid-compile ends by itself (no orphan compiling on)."""
    script = textwrap.dedent(
        f"""
        import subprocess, sys
        import os
        child = subprocess.Popen([sys.executable, "-c",
            "import threading, time; from lc0py.search.precompile import _exit_with_parent; "
            "threading.Thread(target=_exit_with_parent, args=(%d,), daemon=True).start(); "
            "time.sleep(600)" % os.getpid()])
        open({str(tmp_path / "pid")!r}, "w").write(str(child.pid))
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True)
    pid = int((tmp_path / "pid").read_text())
    # the orphan is reparented; its watcher notices within a second or two (polled, no clock
    # asserted: the loop ends as soon as the process is gone or a zombie)
    for _ in range(600):
        if not _running(pid):
            return
        time.sleep(0.1)
    os.kill(pid, 9)
    pytest.fail("the helper outlived its engine by a minute")


def _running(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
