"""lc0's classic search on the compiled core: the controller (limits, stoppers, info, best move)
and the worker (gather → evaluate → back up), docs/search.md.

* Worker (``_work``): lc0's ``SearchWorker::ExecuteOneIteration`` with one thread:
  ``_gather`` is ``GatherMinibatch`` (``pick_nodes`` distributes a collision budget per walk,
  new leaves are extended, cache hits and terminals are backed up out of order and cancel that
  round's collisions, a top-level collision is enlarged to the remaining budget and ends the
  gather); the batch goes to ``backend.evaluate_async``; ``_complete`` writes priors (lc0's
  softmax, 16-bit), backs every leaf up and cancels the shared collisions once work was done.
  With ``params.overlap`` the next minibatch is gathered while the backend computes the
  current one (lc0py's choice for GPUs; lc0 uses a second search thread for that).
* Controller: stoppers after every batch (``stoppers.py``: lc0's ``MaybeTriggerStop``) and
  after a gather whose out-of-order visits may have reached a limit (lc0's watchdog thread), a
  watchdog thread for time limits and ``stop``, info snapshots, best move and PV by lc0's
  ``GetBestChildNoTemperature`` order.

The tree is guarded by ``tree.lock``; compiled code runs without the GIL, the worker releases
the lock while it waits for the backend, so ``stop`` is answered at once.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import chess
import numpy as np

from lc0py.backends.base import Backend
from lc0py.chess.core import board as B
from lc0py.search.core import arrays as A
from lc0py.search.core import gather as G
from lc0py.search.core import noise as noise_core
from lc0py.search.core import pv as pv_core
from lc0py.search.core.nncache import NNCache
from lc0py.search.core.numeric import cpuct as cpuct_formula
from lc0py.search.core.numeric import fpu_value, m_utility, prior_value, puct_mult
from lc0py.search.core.pick import (
    P_BASE,
    P_BASE_ROOT,
    P_CPUCT,
    P_CPUCT_ROOT,
    P_DRAW_EVEN,
    P_DRAW_ODD,
    P_FACTOR,
    P_FACTOR_ROOT,
    P_FPU,
    P_FPU_ABS,
    P_FPU_ABS_ROOT,
    P_FPU_ROOT,
    P_ML_A0,
    P_ML_A1,
    P_ML_A2,
    P_ML_CAP,
    P_ML_SLOPE,
    P_ML_THR,
    node_q,
)
from lc0py.search.core.ranking import best_edge, root_stats
from lc0py.search.core.rescale import P_TB_PIECES
from lc0py.search.core.tree import NodeTree, NodeView
from lc0py.search.fastcall import Resolved
from lc0py.search.params import SearchParams, effective_params
from lc0py.search.stoppers import Hints, IterationStats, counter_limit, reads_root_stats, should_stop
from lc0py.search.tablebase import TablebaseProbe
from lc0py.search.temperature import effective_temperature, lc0_game_ply, pick_with_temperature
from lc0py.search.worker import (
    Batch,
    Deferred,
    SearchWorker,
    batches_in_flight,
    network_batches_outstanding,
    params_array,
)

_EMPTY = np.zeros(0, np.uint8)


@dataclass
class SearchLimits:
    """What ends a search. ``None`` = no such limit. Times in ms from ``start_time``."""

    nodes: int | None = None  # root visits, including reused ones
    deadline_ms: int | None = None  # movetime / time manager deadline
    depth: int | None = None
    mate: int | None = None
    infinite: bool = False  # bestmove only after stop()
    searchmoves: Sequence[chess.Move] = ()
    smart_pruning: bool = True  # only with a time or node budget (UCI), never in benchmark
    ram_limit_mb: int = 0  # RamLimitMb: stop before the tree grows past it (0: no limit)
    # The root moves were ranked by DTZ (lc0's ``root_is_in_dtz_``; the UCI layer filters them into
    # ``searchmoves``): then lc0 makes no in-tree tablebase probes.
    tablebase_root_dtz: bool = False


@dataclass
class PvLine:
    """One root move and its line, values from the root side to move."""

    moves: list[chess.Move]
    wl: float
    d: float
    m: float
    n: int
    mate: int | None = None  # plies-based mate distance (signed), when proven


@dataclass
class SearchInfo:
    """A snapshot for ``info`` lines (docs/uci-and-tools.md §5)."""

    depth: int
    seldepth: int
    time_ms: int
    nodes: int
    nps: int | None
    playouts: int
    nn_evals: int
    lines: list[PvLine]
    cache_fill_permille: int = 0
    tree_bytes: int = 0
    tb_hits: int = 0  # successful tablebase probes (the root filter's and the in-tree ones)


@dataclass
class SearchCallbacks:
    on_info: Callable[[SearchInfo], None] = lambda info: None
    on_bestmove: Callable[[chess.Move | None, chess.Move | None], None] = lambda m, p: None
    on_message: Callable[[str], None] = lambda text: None  # "info string" texts
    on_verbose: Callable[[Search], None] = lambda search: None  # VerboseMoveStats hook


class Search:
    """One search of ``tree``'s root. ``start()`` runs it in threads, ``run()`` blocks until done."""

    def __init__(
        self,
        tree: NodeTree,
        backend: Backend,
        params: SearchParams,
        limits: SearchLimits,
        cache: NNCache,
        callbacks: SearchCallbacks | None = None,
        start_time: float | None = None,
        input_format: int | None = None,
        tablebase: TablebaseProbe | None = None,
        eval_estimate_s: float | None = None,
    ) -> None:
        # How long one network batch takes, from hand-over to result (the previous search's
        # figure to start with; ``_no_time_for_another_batch``)
        self.eval_s = eval_estimate_s
        self._launched: dict[int, float] = {}
        # Syzygy tables (issue 12): the UCI layer filters the root moves with them; their hits
        # are reported here. The compiled core does not probe inside the tree yet.
        self.tablebase = tablebase
        self.tree = tree
        self.history = tree.history
        self.backend = backend
        self.params = params = effective_params(params, backend.info)
        self.limits = limits
        self.cache = cache
        self.cb = callbacks or SearchCallbacks()
        self.start_time = time.perf_counter() if start_time is None else start_time
        self.input_format = backend.info.input_format if input_format is None else input_format
        self._lock = tree.lock
        self._stop = threading.Event()
        # A stop asked for (``stop``, the deadline) before the root has a visit: lc0 sends no
        # ``bestmove`` until it has one (``MaybeTriggerStop``), so the stop waits for it.
        self._stop_requested = False
        self._worker_ended = False
        self._done = threading.Event()
        self._released = False
        self._responded = False
        self._bestmove_wanted = not limits.infinite
        # The stoppers fired between a gather and its backup: the answer goes out at once, the
        # batches in flight are backed up afterwards (``_check_stoppers_in_flight``)
        self._answer_in_flight = False
        self.root_id = tree.root_id
        self.initial_visits = int(tree.arrays.n[self.root_id])
        self.first_playout_time: float | None = None
        self._first_eval_ms: int | None = None
        self._last_info: tuple[object, int, int] | None = None
        self._last_info_time = 0.0
        self.error: BaseException | None = None
        self.stop_reason = ""
        self._threads: list[threading.Thread] = []
        self._root_black = tree.history.board.turn == chess.BLACK
        self._has_mlh = bool(backend.info.has_moves_left)
        self.prm = params_array(params, self._root_black, self._has_mlh)
        # lc0 probes in-tree positions only when the root was not ranked by DTZ
        if tablebase is not None and not limits.tablebase_root_dtz:
            self.prm[P_TB_PIECES] = tablebase.max_pieces
        board = tree.history.board
        self._filter = {B.from_chess_move(m, board) for m in limits.searchmoves} or None
        self._allowed = _EMPTY
        self._hints = Hints()
        self._root_stoppers = reads_root_stats(limits, params)
        self._best_root_edge = -1
        self._stop_flag = np.zeros(1, np.uint8)  # read by compiled code
        self._inflight: list[Batch] = []  # gathered and not backed up yet, oldest first
        # evaluations handed to the backend whose batches the answered search gave up: the
        # worker thread waits for them (or cancels them) before it ends, so none outlives it
        self._abandoned: list[object] = []
        self._held: list[Batch] = []  # gathered while the device was busy, not handed over yet
        self.worker = SearchWorker(
            tree, backend, params, cache, self.input_format, self.prm, self._stop_flag, tablebase
        )
        self.target = self.worker.target
        # network batches handed to the backend at once: 2, or one a minibatch in flight over a
        # multi-device backend (``worker.network_batches_outstanding``)
        self._max_outstanding = network_batches_outstanding(params, self.worker.backend)
        # lc0's Random: the temperature draw and the root's Dirichlet noise (seeded for tests)
        self._rng = np.random.default_rng(params.random_seed)
        self._final: tuple[chess.Move | None, chess.Move | None] | None = None
        if params.noise_epsilon > 0.0 and tree.arrays.n[self.root_id] == 0:
            # the root is evaluated in this search: its priors get the noise (a reused root,
            # already evaluated, keeps its priors, as in lc0)
            samples = self._rng.gamma(params.noise_alpha, 1.0, noise_core.SAMPLES)
            self.worker.root_noise = samples.astype(np.float32)
        self._cache_bytes = cache.nbytes()  # what it may grow to (allocated on demand)
        self._root_stats_out = np.zeros(7, np.int64)  # root_stats' output, reused every batch
        # after every batch: compiled calls through resolved entry points (``fastcall``)
        self._root_stats = Resolved(root_stats)
        self._best_edge = Resolved(best_edge)
        self._child_at = Resolved(A.child_at)
        # info's lines (``core/pv.py``): buffers reused by every info
        self._ranked_children = Resolved(pv_core.ranked_children)
        self._ranked_out = np.zeros(B.MAX_MOVES, np.int32)
        self._pv_moves = Resolved(pv_core.pv_moves)
        self._pv_out = np.zeros(pv_core.MAX_PV, np.int64)
        self._pv_scratch = np.zeros((2, B.POS_WORDS), np.uint64)
        self._root_pos = self.worker.root_position()
        self._chess960 = bool(board.chess960)
        tree.max_bytes = max(0, limits.ram_limit_mb * 1_000_000 - self._cache_bytes)
        self._update_root_filter()

    # ------------------------------------------------------------------ public control ----
    @property
    def root(self) -> NodeView:
        return NodeView(self.tree, self.root_id)

    def start(self) -> None:
        """Run the search in a worker thread plus a watchdog; returns at once."""
        worker = threading.Thread(target=self._worker, name="lc0py-search", daemon=True)
        watchdog = threading.Thread(target=self._watchdog, name="lc0py-watchdog", daemon=True)
        self._threads = [worker, watchdog]
        worker.start()
        watchdog.start()

    def run(self) -> None:
        """Search until a limit is reached (blocking); ``limits.infinite`` is not allowed. A
        search answered while batches were in flight (``_check_stoppers_in_flight``) returns
        once they are backed up, so the tree it leaves is whole."""
        self.start()
        self.wait()
        if self._answer_in_flight:
            self.join()

    def stop(self) -> None:
        """Stop and emit ``bestmove`` (also ends an infinite search / ponder): at once when the
        root has a visit, else as soon as the first evaluation is backed up (lc0's rule)."""
        self._bestmove_wanted = True
        if self._defer_stop():
            return
        self._set_stop()
        self._finish()

    def _may_answer(self) -> bool:
        """Whether a ``bestmove`` may be sent now: the root has a visit (lc0's
        ``total_playouts_ + initial_visits_ > 0``), or the worker failed or ended."""
        return self.error is not None or self._worker_ended or int(self.tree.arrays.n[self.root_id]) > 0

    def _defer_stop(self) -> bool:
        """True when the stop must wait for the first evaluation (noted for ``_after_batch``)."""
        if self._stop.is_set() or self._may_answer():
            return False
        self._stop_requested = True
        return True

    def stop_silently(self) -> None:
        """Stop without emitting ``bestmove`` (ponderhit restarts the search)."""
        with self._lock:
            self._responded = True
            self._release_tree()
        self._set_stop()
        self._done.set()

    def _set_stop(self) -> None:
        self._stop_flag[0] = 1
        self._stop.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until ``bestmove`` was sent (the tree is then free for the next search)."""
        return self._done.wait(timeout)

    def join(self, timeout: float | None = None) -> bool:
        """Also wait for the worker and watchdog threads: the worker ends only after every
        evaluation it handed to the backend has finished or was cancelled, so after ``join`` no
        work of this search is left anywhere (the engine joins before the next search starts:
        one search's evaluations never overlap the next one's). True when both ended."""
        for t in self._threads:
            if t is not threading.current_thread():
                t.join(timeout)
        return not any(t.is_alive() for t in self._threads)

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def elapsed_ms(self) -> int:
        return int((time.perf_counter() - self.start_time) * 1000)

    # ------------------------------------------------------------------ worker ----
    @property
    def playouts(self) -> int:
        return int(self.worker.stats[G.S_PLAYOUTS])

    @property
    def nn_evals(self) -> int:
        return int(self.worker.stats[G.S_NN])

    @property
    def sum_depth(self) -> int:
        return int(self.worker.stats[G.S_DEPTH_SUM])

    @property
    def max_depth(self) -> int:
        return int(self.worker.stats[G.S_MAX_DEPTH])

    @property
    def batches(self) -> int:
        return self.worker.batches

    def _worker(self) -> None:
        try:
            self._work()
        except BaseException as exc:  # backend crash etc.: report, answer bestmove anyway
            self.error = exc
            self.cb.on_message(f"error in search: {type(exc).__name__}: {exc}")
            self._bestmove_wanted = True
            self._set_stop()
        finally:
            self._worker_ended = True
            try:
                if (self._stop.is_set() or self._stop_requested) and self._bestmove_wanted:
                    self._set_stop()
                    self._finish()
            finally:
                with self._lock:
                    if self._responded:  # answered while batches were in flight (_answer_in_flight)
                        self._release_tree()
                self._drain_evaluations()
                self.worker.close()

    def _drain_evaluations(self) -> None:
        """Before the worker thread ends: cancel the evaluations not started yet and wait for
        the running ones (their results are not used), so no evaluation outlives the search."""
        with self._lock:
            pendings = list(self._abandoned) + [b.pending for b in self._inflight if b.pending is not None]
            self._abandoned.clear()
        seen: set[int] = set()
        for pending in pendings:
            if id(pending) in seen:
                continue
            seen.add(id(pending))
            cancel = getattr(pending, "cancel", None)
            if cancel is not None and cancel():
                continue  # queued in the evaluation thread, never started
            if isinstance(pending, Deferred):
                continue  # computed only when asked for: nothing runs
            try:
                pending.result()  # type: ignore[attr-defined]
            except BaseException:  # noqa: S110 - the search has answered; the error is moot
                pass

    def _work(self) -> None:
        """lc0's ``ExecuteOneIteration`` in a loop (the worker's gather → evaluate → backup, then
        this controller's stoppers and info). With ``overlap`` the next minibatch is gathered
        while the backend computes the previous one; with ``Threads`` above 2, minibatches
        gathered while the device already has a batch queued wait here and go to it together."""
        overlap = self.params.overlap
        limit = batches_in_flight(self.params, self.worker.backend)
        inflight = self._inflight
        held = self._held
        worker = self.worker
        with self._lock:
            if self._root_has_no_moves():
                self._set_stop()
            elif self.initial_visits > 0:
                # lc0's watchdog thread runs ``MaybeTriggerStop`` before the worker's first
                # iteration: a reused root that already meets a limit (``go nodes`` at or below
                # its visits, one legal move, a proven win...) is answered without a playout.
                self._maybe_trigger_stop()
        while not self._stop.is_set():
            if self._stop_requested and inflight:  # answering after the first evaluation:
                self._complete_oldest()  # nothing more is sent to the backend
                continue
            if self._no_time_for_another_batch():  # finish what runs, then wait for the deadline
                if inflight:
                    self._complete_oldest()
                else:
                    self._stop.wait(0.005)
                continue
            with self._lock:
                if self._released:
                    break
                room = self.target - sum(b.nn_count for b in held)
                full = bool(held) and room <= 0
            if full:  # no room for another minibatch: wait for the oldest batch, then send these
                self._complete_oldest()
                continue
            with self._lock:
                if self._released:
                    break
                hints, best = self._hints, self._best_root_child()
                batch = worker.gather(hints.remaining_playouts, self._allowed, best, room if held else None)
                self.initial_visits -= batch.reverted
                self._note_first_playout()
                worker.collect_collisions(batch)
                if batch.nn_count:
                    inflight.append(batch)
                    held.append(batch)
                    if self._groups_outstanding() < self._max_outstanding:
                        self._launch_held()
                    full = bool(held) and sum(b.nn_count for b in held) >= self.target
                    if batch.ooo:  # the playouts grew before the batch's own visits
                        self._check_stoppers_in_flight()
                else:
                    worker.complete(batch, None)
                    self._after_batch()
                    if not inflight:
                        continue
            if self._answer_in_flight:
                break
            if inflight and (
                len(inflight) >= limit or full or not overlap or self._stop.is_set() or not batch.nn_count
            ):
                self._complete_oldest()
        if self._answer_in_flight:  # answered now; the batches in flight still join the tree
            self._finish()
        if not self._bestmove_wanted or self._answer_in_flight:
            while self._complete_oldest():  # infinite search at its limit: keep the tree whole
                pass

    def _no_time_for_another_batch(self) -> bool:
        """A batch handed over now would end after the deadline (by ``eval_s``): then none is,
        once the root has a visit. At the deadline no evaluation is left in the backend, so the
        next move does not start by waiting for this one's (with a slow CPU backend under a
        short clock that wait was charged to every next move and lost games on time)."""
        lim = self.limits
        if lim.deadline_ms is None or lim.infinite or self.eval_s is None:
            return False
        if int(self.tree.arrays.n[self.root_id]) == 0:
            return False  # the first evaluation is always waited for
        return self.elapsed_ms() + self.eval_s * 1000.0 > lim.deadline_ms

    def _groups_outstanding(self) -> int:
        """(lock held) Network batches handed to the backend and not backed up yet (finished or
        not: counting only unfinished ones would let a third batch go out while a finished one
        waits, and the held minibatches past it grow beyond what the backend was prepared for)."""
        return len({id(b.pending) for b in self._inflight if b.pending is not None})

    def _launch_held(self) -> None:
        """(lock held) Hand the minibatches gathered so far to the backend as one batch."""
        if self._held:
            self.worker.submit(self._held)
            self._launched[id(self._held[0].pending)] = time.perf_counter()
            self._held.clear()

    def _complete_oldest(self) -> bool:
        """Wait for the oldest network batch and back up every minibatch it carried; then the
        minibatches that waited for the device go to it."""
        with self._lock:
            batch = self._inflight[0] if self._inflight and not self._released else None
            if batch is not None and batch.pending is None:
                self._launch_held()
        if batch is None:
            return False
        pending = batch.pending
        assert pending is not None
        out = pending.result()  # outside the lock: the backend may take long
        launched = self._launched.pop(id(pending), None)
        if launched is not None:  # tracks the slowest recent batch, forgetting slowly
            took = time.perf_counter() - launched
            self.eval_s = took if self.eval_s is None else max(took, 0.7 * self.eval_s)
        with self._lock:
            group = [b for b in self._inflight if b.pending is pending]
            if self._released:  # the search answered meanwhile: keep the evaluations only
                for b in group:
                    self.worker.apply(b, out, to_tree=False)
                return False
            for b in group:
                self._inflight.remove(b)
                self.worker.complete(b, out)
                self._after_batch()
            if self._held and self._groups_outstanding() < self._max_outstanding:
                self._launch_held()
        return True

    def _release_tree(self) -> None:
        """(lock held) Give the tree back: visits in flight of unfinished batches and the shared
        collisions are cancelled, so the next search starts on a consistent tree."""
        if self._released:
            return
        self._released = True
        try:
            self._abandoned.extend(b.pending for b in self._inflight if b.pending is not None)
            for batch in self._inflight:  # every visit first: a failed batch below must not stop it
                self.worker.cancel_visits(batch)
            for batch in self._inflight:  # finished evaluations still fill the NN cache
                if batch.pending is not None and batch.pending.done():
                    try:
                        self.worker.apply(batch, batch.pending.result(), to_tree=False)
                    except Exception as exc:  # a failed batch: its visits are already undone
                        self.cb.on_message(f"error in search: {type(exc).__name__}: {exc}")
        finally:
            self._inflight.clear()
            self._held.clear()
            self.worker.cancel_shared_collisions()

    # ------------------------------------------------------------------ stopping ----
    def _note_first_playout(self) -> None:
        if self.first_playout_time is None and self.playouts:
            self.first_playout_time = time.perf_counter()

    def _after_batch(self) -> None:
        self._note_first_playout()
        if self._filter is not None:  # the root's edges are sorted once it is evaluated
            self._update_root_filter()
        self._best_root_edge = self._best_edge_now()
        self._maybe_trigger_stop()
        self._maybe_send_info()

    def iteration_stats(self) -> IterationStats:
        """lc0's ``PopulateCommonIterationStats`` (after every batch: each value read once)."""
        out = self._root_stats_out
        prm = self.prm
        absolute, fpu, draw = bool(prm[P_FPU_ABS_ROOT]), float(prm[P_FPU_ROOT]), float(prm[P_DRAW_ODD])
        self._root_stats(self.tree.arrays, self.root_id, absolute, fpu, draw, out)
        counters = self.worker.stats
        playouts = int(counters[G.S_PLAYOUTS])
        used = self.tree.bytes_used()
        nodes = self.tree.num_nodes
        edges, largest, second, win, losing, may_resign, mate = out.tolist()
        return IterationStats(
            time_since_movestart=self.elapsed_ms(),
            total_nodes=playouts + self.initial_visits,
            nodes_since_movestart=playouts,
            batches_since_movestart=self.batches,
            average_depth=int(counters[G.S_DEPTH_SUM]) // (playouts or 1),
            edges=edges,
            largest_n=largest,
            second_n=second,
            win_found=bool(win),
            losing_edges=losing,
            may_resign=bool(may_resign),
            mate_depth=mate or None,
            memory_bytes=used + self._cache_bytes,
            tree_nodes=nodes,
            node_bytes=used / max(1, nodes),  # bytes_per_node()
            batch_visits=self.target,
        )

    def _check_stoppers_in_flight(self) -> None:
        """(lock held) The stoppers between a gather and its backup, as lc0's watchdog thread
        (``Search::WatchdogThread``) runs ``MaybeTriggerStop`` every <= 100 ms against the
        playouts so far: while a batch is evaluated those already hold the visits its gather
        backed up out of order (cache hits and terminals, ``DoBackupUpdateSingleNode``), so when
        they reach ``go nodes`` lc0 answers before the batch's own visits are backed up, and its
        search thread then finishes the batch into the tree. lc0py checks once after every such
        gather (deterministic: lc0's watchdog sees that state whenever the evaluation outlasts
        its wait). The hints filled here are thrown away (lc0's watchdog keeps its own); the
        search thread's come from the check after the batch."""
        self._maybe_trigger_stop(Hints())
        if self._stop.is_set() and self._bestmove_wanted and not self._stop_requested:
            self._answer_in_flight = True

    def _maybe_trigger_stop(self, hints: Hints | None = None) -> None:
        if not self._root_stoppers:
            self._check_counter_limits()
            return
        stats = self.iteration_stats()
        if stats.total_nodes == 0 or self._stop.is_set():
            return
        if self._stop_requested:  # a stop that waited for the first evaluation
            self._set_stop()
            return
        if self._first_eval_ms is None and stats.nodes_since_movestart > 0:
            self._first_eval_ms = stats.time_since_movestart
            first = True
        else:
            first = False
        if hints is None:
            hints = self._hints = Hints()
        reason = should_stop(self.limits, self.params, stats, hints, self._first_eval_ms, first)
        if reason:
            self._limit_reached(reason)

    def _check_counter_limits(self) -> None:
        """``_maybe_trigger_stop`` where the stoppers read only the counters and the clock (no
        smart pruning, RAM limit or ``go mate``: ``reads_root_stats``), as every ``benchmark``
        search: the same checks in the same order, without the root's statistics."""
        playouts = self.playouts
        total = playouts + self.initial_visits
        if total == 0 or self._stop.is_set():
            return
        if self._stop_requested:
            self._set_stop()
            return
        now = self.elapsed_ms()
        if self._first_eval_ms is None and playouts > 0:
            self._first_eval_ms = now
        average_depth = self.sum_depth // (playouts or 1)
        reason = counter_limit(self.limits, total, now, average_depth)
        if reason:
            self._limit_reached(reason)

    def _limit_reached(self, reason: str) -> None:
        if self._stop.is_set():
            return
        self.stop_reason = reason
        if self._defer_stop():
            return
        self._set_stop()
        if self.limits.infinite and not self._bestmove_wanted:
            self.cb.on_message("WARNING: Search has reached limit and does not make any progress.")

    def _watchdog(self) -> None:
        """Every 50 ms, and exactly at the deadline: time limit, ``stop``, 5-second info."""
        while not self._done.is_set():
            timeout = 0.05
            deadline = self.limits.deadline_ms
            if deadline is not None and not self.limits.infinite and not self._stop_requested:
                left = (deadline - (time.perf_counter() - self.start_time) * 1000) / 1000
                timeout = max(0.0005, min(timeout, left))
            if self._done.wait(timeout):
                return
            if self._stop.is_set() and self._bestmove_wanted:
                self._finish()
                return
            lim = self.limits
            if lim.deadline_ms is not None and not lim.infinite and self.elapsed_ms() >= lim.deadline_ms:
                self._limit_reached("time")
                if self._bestmove_wanted and self._stop.is_set():
                    self._finish()
                    return
            with self._lock:
                if time.perf_counter() - self._last_info_time > 5.0 and self.playouts > 0:
                    self._send_info()

    # ------------------------------------------------------------------ root ----
    def _root_has_no_moves(self) -> bool:
        t = self.tree.arrays
        if t.edge0[self.root_id] >= 0:
            return int(t.nedges[self.root_id]) == 0
        return not any(self.history.board.generate_legal_moves())

    def _update_root_filter(self) -> None:
        root = self.root
        moves = root.moves
        if self._filter is None or moves is None:
            self._allowed = _EMPTY
            return
        allowed = np.array([mv in self._filter for mv in moves], dtype=np.uint8)
        self._allowed = allowed if allowed.any() else _EMPTY

    def _best_edge_now(self) -> int:
        draw = float(self.prm[P_DRAW_EVEN])
        return int(self._best_edge(self.tree.arrays, self.root_id, draw, self._allowed))

    def _best_root_child(self) -> int:
        e = self._best_root_edge
        if e < 0:
            return -1
        return int(self._child_at(self.tree.arrays, self.root_id, e))

    def draw_score(self, depth: int) -> float:
        """lc0's ``GetDrawScore(depth odd)`` (root: depth 0)."""
        return float(self.prm[P_DRAW_ODD] if depth % 2 else self.prm[P_DRAW_EVEN])

    # ------------------------------------------------------------------ formulas (verbose) ----
    def puct_terms(self, node: NodeView) -> tuple[float, float, float]:
        """(cpuct·sqrt(children visits), FPU, draw score) of ``node`` (root or a root child), the
        same compiled formulas ``pick_nodes`` uses."""
        is_root = node.id == self.root_id
        t = self.tree.arrays
        p = self.prm
        ds = self.draw_score(0 if is_root else 1)
        if is_root:
            cp = cpuct_formula(p[P_CPUCT_ROOT], p[P_FACTOR_ROOT], p[P_BASE_ROOT], node.n)
            absolute, value = bool(p[P_FPU_ABS_ROOT]), p[P_FPU_ROOT]
        else:
            cp = cpuct_formula(p[P_CPUCT], p[P_FACTOR], p[P_BASE], node.n)
            absolute, value = bool(p[P_FPU_ABS]), p[P_FPU]
        visited = np.float32(0.0)
        for i, c in enumerate(node.children):
            if c is not None and c.n > 0:
                visited += np.float32(prior_value(t.ep[int(t.edge0[node.id]) + i]))
        fpu = fpu_value(absolute, value, node_q(t, node.id, -ds), visited)
        return float(puct_mult(cp, node.n)), float(fpu), ds

    def m_util(self, parent: NodeView, child: NodeView | None, q: float) -> float:
        """Moves-left utility of ``child`` (0 without a moves-left head or when not visited)."""
        p = self.prm
        if not self._has_mlh or child is None or child.n == 0:
            return 0.0
        if not abs(node_q(self.tree.arrays, parent.id, 0.0)) > np.float32(p[P_ML_THR]):
            return 0.0
        return float(
            m_utility(
                child.m,
                parent.m,
                q,
                p[P_ML_SLOPE],
                p[P_ML_CAP],
                p[P_ML_A0],
                p[P_ML_A1],
                p[P_ML_A2],
                p[P_ML_THR],
            )
        )

    # ------------------------------------------------------------------ results ----
    def _avg_depth(self) -> int:
        return self.sum_depth // self.playouts if self.playouts else 0

    def ranked_root_children(self) -> list[NodeView]:
        """Visited-or-not root children that have nodes, best first (lc0's order)."""
        ids = self._ranked_child_ids()
        return [NodeView(self.tree, c) for c in ids]

    def _ranked_child_ids(self) -> list[int]:
        """``ranked_root_children``' node ids (one compiled call, ``core/pv.py``)."""
        out = self._ranked_out
        k = self._ranked_children(self.tree.arrays, self.root_id, self.draw_score(0), self._allowed, out)
        return out[:k].tolist()

    def _root_children(self) -> list[NodeView]:
        kids = self.root.children
        if self._allowed is not _EMPTY and len(self._allowed):
            return [c for i, c in enumerate(kids) if c is not None and self._allowed[i]]
        return [c for c in kids if c is not None]

    def _best_move_of(self, node: int, depth: int) -> int:
        """Best edge of ``node`` (−1 if none); the root uses searchmoves."""
        allowed = self._allowed if node == self.root_id else _EMPTY
        return int(best_edge(self.tree.arrays, node, self.draw_score(depth), allowed))

    def _code_of_edge(self, node: int, e: int) -> int:
        t = self.tree.arrays
        return int(t.emove[int(t.edge0[node]) + e])

    def _pv(self, first: int) -> list[chess.Move]:
        """The line of root child ``first``: best children while they have visits, then the
        best reply by prior (§5 pv); walked by one compiled call (``core/pv.py``)."""
        prm, out = self.prm, self._pv_out
        k = self._pv_moves(
            self.tree.arrays,
            first,
            float(prm[P_DRAW_EVEN]),
            float(prm[P_DRAW_ODD]),
            self._root_pos,
            self._chess960,
            self._pv_scratch,
            out,
        )
        move = chess.Move
        return [move(c & 63, (c >> 6) & 63, (c >> 12) or None) for c in out[:k].tolist()]

    def best_move(self) -> tuple[chess.Move | None, chess.Move | None]:
        """``bestmove`` and ``ponder`` (§9): the ponder move may be an unvisited reply. Once the
        search has answered, the move it played (drawn with the temperature, if any); before,
        the best move without temperature."""
        if self._final is not None:
            return self._final
        return self._with_ponder(self._best_move_of(self.root_id, 0))

    def temperature(self) -> float:
        """The move-selection temperature of this search (lc0's ``EnsureBestMoveKnown``)."""
        return effective_temperature(self.params, lc0_game_ply(self.history.board) // 2)

    def _choose_final_move(self) -> tuple[chess.Move | None, chess.Move | None]:
        """``EnsureBestMoveKnown``: the move to play, drawn with the temperature when there is
        one and the root has visits and edges; the ponder move is the best reply without it."""
        t = self.tree.arrays
        root = self.root_id
        temperature = self.temperature()
        e = -1
        if temperature and t.n[root] > 0 and t.edge0[root] >= 0 and t.nedges[root] > 0:
            _, fpu, ds = self.puct_terms(self.root)
            p = self.params
            offset, cutoff = p.temp_visit_offset, p.temp_value_cutoff
            e = pick_with_temperature(t, root, temperature, offset, cutoff, fpu, ds, self._allowed, self._rng)
        if e < 0:
            e = self._best_move_of(root, 0)
        return self._with_ponder(e)

    def _with_ponder(self, e: int) -> tuple[chess.Move | None, chess.Move | None]:
        """Root edge ``e`` (−1: none chosen) as ``bestmove`` with its ``ponder`` move."""
        t = self.tree.arrays
        root = self.root_id
        board = self.history.board
        if e < 0:
            if t.edge0[root] >= 0 and t.nedges[root] > 0:
                allowed = [
                    i for i in range(int(t.nedges[root])) if not len(self._allowed) or self._allowed[i]
                ]
                return B.to_chess_move(self._code_of_edge(root, allowed[0] if allowed else 0), board), None
            moves = list(board.generate_legal_moves())
            if self._filter:
                moves = [m for m in moves if B.from_chess_move(m, board) in self._filter] or moves
            return (moves[0] if moves else None), None
        best = B.to_chess_move(self._code_of_edge(root, e), board)
        ponder = None
        c = int(A.child_at(t, root, e))
        if c >= 0 and t.n[c] > 0 and t.edge0[c] >= 0 and t.nedges[c] > 0:
            pe = self._best_move_of(c, 1)
            if pe < 0:
                pe = 0
            after = board.copy(stack=False)
            after.push(best)
            ponder = B.to_chess_move(self._code_of_edge(c, pe), after)
        return best, ponder

    def info(self) -> SearchInfo:
        """The current snapshot (call with the lock held or after the search)."""
        root = self.root
        now = time.perf_counter()
        nps = None
        if self.first_playout_time is not None:
            dt = int((now - self.first_playout_time) * 1000)
            if dt >= 1:
                nps = self.playouts * 1000 // dt
        lines = []
        for c in self._ranked_child_ids()[: max(1, self.params.multipv)]:
            child = NodeView(self.tree, c)
            if child.n > 0:
                wl, d, m = child.wl, child.d, child.m
            else:
                wl, d, m = -root.wl, root.d, root.m + 1  # unvisited: the root's values
            mate = None
            if child.terminal and child.n > 0 and child.wl != 0:
                # lc0: round(M) / 2 + 1 plies-to-moves; a tablebase result + 101 (shown as a long mate)
                tb = child.terminal_kind == A.TABLEBASE
                mate = int(math.floor(child.m + 0.5) / 2 + (101 if tb else 1))
                mate = mate if child.wl > 0 else -mate
            lines.append(PvLine(self._pv(child.id), wl, d, m, child.n, mate))
        if not lines and root.n > 0:
            lines.append(PvLine([], -root.wl, root.d, root.m, root.n))
        return SearchInfo(
            depth=self._avg_depth(),
            seldepth=self.max_depth,
            time_ms=int((now - self.start_time) * 1000),
            nodes=self.playouts + self.initial_visits,
            nps=nps,
            playouts=self.playouts,
            nn_evals=self.nn_evals,
            lines=lines,
            cache_fill_permille=self.cache.fill_permille(),
            tree_bytes=self.tree.bytes_used(),
            tb_hits=int(getattr(self.tablebase, "hits", 0)),
        )

    def bytes_per_node(self) -> float:
        """Tree storage in use per node (nodes and edges, compiled arrays)."""
        return self.tree.bytes_used() / max(1, self.tree.num_nodes)

    def _maybe_send_info(self) -> None:
        if not self.playouts or self._responded:
            return
        e = self._best_root_edge
        state = (e, self._avg_depth(), self.max_depth)
        if state != self._last_info or time.perf_counter() - self._last_info_time > 5.0:
            self._send_info()
            self._last_info = state

    def _send_info(self) -> None:
        info = self.info()
        self._last_info_time = time.perf_counter()
        self.cb.on_info(info)

    def _finish(self) -> None:
        """Emit the final info, verbose stats and ``bestmove`` exactly once. After
        ``_check_stoppers_in_flight`` stopped the search, from the tree as it is, batches still
        in flight (the worker backs them up, then gives the tree back before it ends)."""
        with self._lock:
            if self._responded:
                return
            self._responded = True
            try:
                if not self._answer_in_flight:
                    self._release_tree()
            except BaseException as exc:  # the tree's counts may be off; the move is still chosen
                self.cb.on_message(f"error in search: {type(exc).__name__}: {exc}")
            try:
                self.cb.on_info(self.info())  # at least one score line before bestmove
                if self.params.verbose_move_stats:
                    self.cb.on_verbose(self)
                self._final = self._choose_final_move()
                best, ponder = self._final
            except BaseException as exc:  # never leave the GUI without a bestmove
                self.cb.on_message(f"error in search: {type(exc).__name__}: {exc}")
                moves = list(self.history.board.generate_legal_moves())
                best, ponder = (moves[0] if moves else None), None
        try:
            self.cb.on_bestmove(best, ponder)
        finally:
            self._done.set()
            self.cb = SearchCallbacks(on_message=self.cb.on_message)  # drop closures (cycles)
