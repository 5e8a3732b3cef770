"""The search core's first compile on both cores: a helper process compiles (and caches) one share
of the compiled functions while the engine compiles the other, and the engine then loads the
helper's share from the cache instead of compiling it.

Why: numba compiles on one core (its compiler holds the GIL and a process-wide lock), and the
core's first compile is ~35 CPU seconds, most of it under one entry point (``gather_minibatch``:
~24 s, half of that ``leaves.extend_picks``). numba's on-disk cache is per function and a
compile looks the cache up for every callee it types, so a function another process has cached
by then is loaded, not compiled. Each share is compiled explicitly (``dispatcher.compile`` for
the argument types the search passes, read off the same objects a search builds), so neither
process runs any search code of the other's share.

The split (CPU seconds of each share's first compile, measured with numba's compile events):

* helper: ``leaves.extend_picks`` (~12 s), ``leaves.prefetch`` (~5 s, sharing move generation
  and encoding with the former), ``tasks.scan_picks`` (the task workers' scan, the same parts);
* engine: ``pick.pick_nodes``, ``gather.resolve_out_of_order``, ``gather.settle_collisions``,
  ``noise.apply_root_noise``, ``gather.backup_batch``, ``leaves.apply_results``, the root's
  ranking (``ranking.best_edge``, ``ranked_edges``, ``root_stats``), tree reuse
  (``arrays.copy_subtree``) and the in-tree tablebase probe's own functions; then it waits for
  the helper and runs the warm-up search (``warmup._run``), which compiles what is left
  (``gather_minibatch`` itself and small functions) with every callee above loaded.

Nothing here changes the machine code: the same functions are compiled for the same types, only
in another process. A helper that fails or is not there costs nothing but the parallelism (the
engine then compiles everything, as before). ``python -m lc0py.search.precompile`` is the
helper; it writes nothing on stdout.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from lc0py.backends.base import POLICY_SIZE, BackendBase, BackendInfo, NetworkOutput, PlanesBatch

FEN = "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1"  # the warm-up search's position (warmup._run)


class FlatBackend(BackendBase):
    """Uniform policy, value 0: enough to drive every compiled function once."""

    name = "warm-up"

    def __init__(self) -> None:
        self.info = BackendInfo(input_format=1, has_wdl=True, has_moves_left=False, recommended_batch=16)

    def evaluate(self, batch: PlanesBatch) -> NetworkOutput:
        n = len(batch)
        wdl = np.tile(np.array([0.25, 0.5, 0.25], np.float32), (n, 1))
        return NetworkOutput(np.zeros((n, POLICY_SIZE), np.float32), wdl, np.zeros(n, np.float32))


def _types(dispatcher: Any, *args: Any) -> tuple[Any, ...]:
    return tuple(dispatcher.typeof_pyval(a) for a in args)


def _calls(share: str) -> Iterator[tuple[Any, tuple[Any, ...]]]:
    """``(dispatcher, argument types)`` of ``share``, the types read off the objects a search
    builds and passes (``worker.SearchWorker``'s call sites; inside ``gather_minibatch`` the
    Python ints and bools it passes on are int64 and bool, as here)."""
    from lc0py.chess.core import board as B
    from lc0py.search.core import arrays as A
    from lc0py.search.core import gather as G
    from lc0py.search.core import leaves as L
    from lc0py.search.core import noise as N
    from lc0py.search.core import pick as P
    from lc0py.search.core import ranking as R
    from lc0py.search.core import tasks as T
    from lc0py.search.core.nncache import NNCache
    from lc0py.search.core.tree import NodeTree
    from lc0py.search.params import SearchParams
    from lc0py.search.search import Search, SearchLimits
    from lc0py.search.worker import Batch

    tree = NodeTree()
    tree.reset_to_position(FEN, [])
    params = SearchParams(
        overlap=False, minibatch_size=16, verbose_move_stats=False, noise_epsilon=0.25, random_seed=0
    )
    search = Search(tree, FlatBackend(), params, SearchLimits(nodes=64, smart_pruning=False), NNCache(1000))
    w = search.worker
    t, root, prm = tree.arrays, w.root_id, w.prm
    b = Batch(w.target + 2)
    pos, cache = w._positions, w.cache.arrays
    one = np.zeros(1, np.int64)
    row = np.zeros(4, np.float32)
    if share == "helper":
        yield L.extend_picks, _types(
            L.extend_picks, t, root, b.picks, 0, 1, pos, cache, w._use_cache, params.two_fold_draws,
            w.input_format, w._fill, b.kinds, b.vals, b.requests, prm, True, w._extend_work,
        )
        yield L.prefetch, _types(
            L.prefetch, t, root, 0, 1, prm, pos, cache, b.requests, w.input_format, w._fill, *w._prefetch_work
        )
        # the task workers' scan (worker._scan_round), else compiled at the first large round
        yield T.scan_picks, _types(
            T.scan_picks, t, root, b.picks, 0, 0, 1, pos, cache, w._use_cache, params.two_fold_draws,
            w.input_format, w._fill, 0, w._staged,
        )
    elif share == "engine":
        allowed = np.zeros(0, np.uint8)
        yield P.pick_nodes, _types(
            P.pick_nodes, t, root, 0, prm, allowed, 1.0, 0, b.picks, one, one, w._vtp, w._pick_work
        )
        yield G.resolve_out_of_order, _types(
            G.resolve_out_of_order, t, root, b.picks, b.kinds, b.vals, 0, 1, params.out_of_order_eval,
            params.sticky_endgames, w.stats,
        )
        yield G.settle_collisions, _types(G.settle_collisions, t, root, b.picks, 0, 1, 0)
        yield N.apply_root_noise, _types(N.apply_root_noise, t, root, pos, row, 0.25)
        yield G.backup_batch, _types(
            G.backup_batch, t, root, b.picks, b.kinds, b.vals, 0, row, row, row, params.sticky_endgames,
            w.stats, prm,
        )
        policy = np.zeros((4, 1858), np.float32)
        wdl = np.zeros((4, 3), np.float32)
        yield L.apply_results, _types(
            L.apply_results, t, b.requests, policy, wdl, row, 0, 1.0, cache, w._use_cache, True,
            b.qdm[0], b.qdm[1], b.qdm[2],
        )
        yield R.best_edge, _types(R.best_edge, t, root, 0.0, allowed)
        yield R.ranked_edges, _types(R.ranked_edges, t, root, 0.0, allowed)
        yield R.root_stats, _types(R.root_stats, t, root, False, 0.0, 0.0, np.zeros(7, np.int64))
        yield A.copy_subtree, _types(A.copy_subtree, t, root, A.allocate(16, 64))
        # in-tree tablebase probes (worker._probe_tablebase), else compiled at the first probe
        # inside a timed go; extend_picks' call there has gather_minibatch's signature
        words = np.zeros(B.POS_WORDS, np.uint64)
        yield L.tb_probe_position, _types(L.tb_probe_position, t, root, root, pos, words)
        yield L.make_tablebase_terminal, _types(L.make_tablebase_terminal, t, root, 0)
    else:
        raise ValueError(f"share {share!r}: not 'helper' or 'engine'")
    w.close()


def compile_share(share: str) -> list[str]:
    """Compile (or load from the cache) every function of ``share``; returns their names."""
    done = []
    for dispatcher, sig in _calls(share):
        dispatcher.compile(sig)
        done.append(dispatcher.py_func.__name__)
    return done


#: how long the engine waits for the helper after its own share: this many times as long as its
#: share took, and at least ``HELPER_WAIT_MIN`` seconds (a hung helper costs only that)
HELPER_WAIT_FACTOR = 3.0
HELPER_WAIT_MIN = 60.0


def _cpus() -> int:
    return os.cpu_count() or 1


def _jit_enabled() -> bool:
    return os.environ.get("NUMBA_DISABLE_JIT", "0") in ("", "0")


class Helper:
    """The helper process, started with the engine's resolved cache folder (so a fallback folder
    is shared too); it ends with its share compiled, or is ended by ``stop()``."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc

    def wait(self, limit: float) -> bool:
        """Wait for the helper at most ``limit`` seconds; whether it finished with its share."""
        try:
            return self.proc.wait(limit) == 0
        except subprocess.TimeoutExpired:
            self.stop()
            return False

    def stop(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                self.proc.kill()
            with contextlib.suppress(Exception):
                self.proc.wait(5)


def start_helper() -> Helper | None:
    """Start the helper process when it can help: the core is cached (so the helper's work
    outlives it), numba compiles (not ``NUMBA_DISABLE_JIT``), and there is more than one CPU.
    None otherwise, or when it cannot be started."""
    from lc0py.search.core.jit import cache_folder
    from lc0py.storage.compiled import ENV, numba_cache_root

    if not _jit_enabled() or cache_folder() is None or _cpus() < 2 or not sys.executable:
        return None
    root = numba_cache_root()
    if root is None:
        return None
    env = dict(os.environ, **{ENV: str(root)})
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "lc0py.search.precompile", str(os.getpid())],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
        )
    except OSError:
        return None
    helper = Helper(proc)
    atexit.register(helper.stop)  # an engine that quits mid-compile ends its helper
    return helper


def compile_in_parallel(run_rest: Callable[[], Any]) -> None:
    """The first compile on two processes: start the helper, compile the engine's share here,
    wait for the helper (``HELPER_WAIT_*``), then ``run_rest()`` (the warm-up search)."""
    helper = start_helper()
    if helper is None:
        run_rest()
        return
    try:
        start = time.perf_counter()
        compile_share("engine")
        helper.wait(max(HELPER_WAIT_MIN, HELPER_WAIT_FACTOR * (time.perf_counter() - start)))
    finally:
        helper.stop()
    run_rest()


def _exit_with_parent(parent: int) -> None:
    """End this helper when the engine that started it is gone (killed mid-compile)."""
    while True:
        time.sleep(1.0)
        if os.getppid() != parent:
            os._exit(1)


def main(argv: list[str]) -> int:
    if argv:
        threading.Thread(target=_exit_with_parent, args=(int(argv[0]),), daemon=True).start()
    compile_share("helper")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
