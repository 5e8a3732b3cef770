"""``warm_up`` loads every compiled function a search reaches, so nothing compiles inside a timed
``go`` on a fresh installation (issue 10: start-up cost never inside a timed search).

Run in a fresh interpreter (numba's compiled signatures are per process; the disk cache only
makes it fast): warm up, note each dispatcher's signatures, then search with batches still in
flight when the node limit stops it (a device-like backend, overlap on), tree reuse and a
two-fold repetition, and check that no dispatcher gained a signature. The search part is checked
to have reached the stop-time path (``cancel_visits``) that the warm-up's own tiny search never
reaches, so the test cannot pass by never getting there.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading

import pytest

SCRIPT = textwrap.dedent(
    """
    import importlib, pkgutil, sys
    from numba.core.registry import CPUDispatcher
    import lc0py.search
    for m in pkgutil.walk_packages(lc0py.search.__path__, "lc0py.search."):
        importlib.import_module(m.name)
    from lc0py.backends.random_backend import RandomBackend
    from lc0py.search.core.nncache import NNCache
    from lc0py.search.params import SearchParams
    from lc0py.search.search import Search, SearchLimits
    from lc0py.search.core.tree import NodeTree
    from lc0py.search.warmup import warm_up

    def signatures():
        out = {}
        for mod in list(sys.modules.values()):
            if getattr(mod, "__name__", "").startswith("lc0py.search"):
                for k, v in vars(mod).items():
                    if isinstance(v, CPUDispatcher):
                        out[f"{mod.__name__}.{k}"] = set(map(str, v.signatures))
        return out

    backend = RandomBackend(delay_ms=2.0)  # batches are in flight while the next is gathered
    warm_up()
    before = signatures()
    import lc0py.search.core.gather as G
    calls = []
    real = G.cancel_visits
    G.cancel_visits = lambda *a: (calls.append(1), real(*a))[1]
    tree, cache = NodeTree(), NNCache(20000)
    moves = []
    for move in ["e2e4", "e7e5", "g1f3", "b8c6", "f3g1", "c6b8", "g1f3"]:
        moves.append(move)
        tree.reset_to_position("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", moves)
        params = SearchParams(minibatch_size=64)
        search = Search(tree, backend, params, SearchLimits(nodes=1500), cache)
        search.run()
        search.join()
        search.best_move()
    backend.close()
    G.cancel_visits = real
    after = signatures()
    new = {k: sorted(v - before.get(k, set())) for k, v in after.items() if v - before.get(k, set())}
    print("cancel_visits calls:", len(calls))
    print("new:", new)
    """
)


def test_nothing_compiles_after_warm_up() -> None:
    run = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    lines = dict(line.split(": ", 1) for line in run.stdout.splitlines() if ": " in line)
    assert int(lines["cancel_visits calls"]) > 0, "no search stopped with a batch in flight"
    assert lines["new"] == "{}", f"compiled inside a timed search: {lines['new']}"


def test_waiting_for_a_first_compile_is_said_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """``warm_up(on_wait)``: nothing cached yet -> one message before the wait (the UCI engine
    sends it as an ``info string``), then the core is loaded; a second call says nothing."""
    from lc0py.search import warmup

    monkeypatch.setattr(warmup, "_done", threading.Event())
    monkeypatch.setattr(warmup, "is_cached", lambda: False)
    monkeypatch.setattr(warmup, "_marker", lambda: None)
    ran: list[int] = []
    monkeypatch.setattr(warmup, "_run", lambda: ran.append(1) or 0.0)
    said: list[str] = []
    warmup.warm_up(on_wait=said.append)
    warmup.warm_up(on_wait=said.append)
    assert said == [warmup.COMPILING]
    assert ran == [1] and warmup.is_warm()


def test_a_caller_waits_for_the_background_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """``start_in_background()`` runs the warm-up on its own thread; a caller that comes while
    it runs waits for it (told once), and the work is done once."""
    from lc0py.search import warmup

    monkeypatch.setattr(warmup, "_done", threading.Event())
    monkeypatch.setattr(warmup, "_background", None)
    monkeypatch.setattr(warmup, "is_cached", lambda: True)
    monkeypatch.setattr(warmup, "_marker", lambda: None)
    release = threading.Event()
    started = threading.Event()
    ran: list[str] = []

    def slow_run() -> float:
        ran.append(threading.current_thread().name)
        started.set()
        release.wait(30)
        return 0.0

    monkeypatch.setattr(warmup, "_run", slow_run)
    warmup.start_in_background()
    assert started.wait(30)
    said: list[str] = []
    waiter = threading.Thread(target=warmup.warm_up, kwargs={"on_wait": said.append})
    waiter.start()
    while not said:  # told after its first half second of waiting (no clock asserted)
        waiter.join(0.05)
        assert waiter.is_alive()
    release.set()
    waiter.join(30)
    assert not waiter.is_alive()
    assert ran == ["lc0py-warm-up"] and warmup.is_warm()
    assert said == ["loading the compiled search core"]
