"""The search worker (lc0's ``SearchWorker``): gather a minibatch, hand it to the backend, fetch
the results and back them up. The per-node work is compiled (``core/gather.py``, ``core/leaves.py``);
this class owns the batch buffers, the shared collisions, the counters, the evaluation thread
(host backends) and the feeder (asynchronous backends, ``feeder.py``), and grows the tree's arrays
when the compiled gather asks for room."""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial

import numpy as np

from lc0py.backends.base import (
    Backend,
    BackendInfo,
    NetworkOutput,
    PendingOutput,
    PlanesBatch,
    prepare_backend,
)
from lc0py.chess.core import board as B
from lc0py.chess.core.encode import fill_code
from lc0py.search.core import gather as G
from lc0py.search.core import leaves as L
from lc0py.search.core import noise as N
from lc0py.search.core import tasks as T
from lc0py.search.core.nncache import NNCache
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
    P_MLH,
    P_NOISE_EPS,
    P_SIZE,
    pick_workspace,
)
from lc0py.search.core.rescale import (
    P_RESCALE_DIFF,
    P_RESCALE_MAX_S,
    P_RESCALE_RATIO,
    P_RESCALE_ROOT_STM,
    P_TB_PIECES,
)
from lc0py.search.core.tree import NodeTree
from lc0py.search.fastcall import Resolved
from lc0py.search.feeder import FedOutput, Feeder
from lc0py.search.params import SearchParams
from lc0py.search.tablebase import TablebaseProbe
from lc0py.search.taskpool import TaskPool

#: With ``overlap``, an asynchronous backend (a GPU) is fed by a ``Feeder`` (its own threads
#: launch and resolve the batches) rather than by the search thread itself. On the H100 host
#: (maia-1900, cuda-fp16, 2 alternating rounds, bench/results/2026-11-28_h100_3070c3c) it took the
#: search from 57.4k to 63.5k nodes/s (search thread 17.3 -> 14.6 us of CPU a node). Those are the
#: figures of the first, one-thread feeder, which also cost T82 5 % on the H100 by launching a batch
#: only after the previous one's wait; the two-thread feeder since is measured in feeder.py.
#: False: the old path, for A/B runs (``scripts/bench/feeder_ab.py``, ``search_timeline.py
#: --no-feeder``).
FEED_ASYNC_BACKENDS = True


class Deferred:
    """A computation run by the first ``result()`` call (the worker, outside the tree lock)."""

    def __init__(self, fn: Callable[[], NetworkOutput]) -> None:
        self._fn: Callable[[], NetworkOutput] | None = fn
        self._out: NetworkOutput | None = None

    def result(self) -> NetworkOutput:
        if self._out is None:
            assert self._fn is not None
            self._out = self._fn()
            self._fn = None
        return self._out

    def done(self) -> bool:
        return self._out is not None


class Batch:
    """One minibatch: its picks (rows of ``pick_nodes``), what extending them gave, and the
    network requests (planes) of its new leaves."""

    def __init__(self, capacity: int) -> None:
        self.picks = np.zeros((capacity, 5), np.int32)
        self.kinds = np.zeros(capacity, np.int8)
        self.vals = np.zeros((capacity, 3), np.float32)
        # q, d, m of its network results (written by ``apply_results``, read by the backup)
        self.qdm = np.zeros((3, capacity), np.float32)
        self.count = 0
        self.ooo = 0  # visits resolved out of order while gathering
        self.reverted = 0  # visits of reused two-fold draws undone while gathering
        self.requests = L.make_requests(capacity)
        # The backend's handle (None: gathered, not yet handed over), shared by the minibatches
        # joined into one network batch; ``offset`` is this one's first row in its outputs.
        self.pending: Future[NetworkOutput] | Deferred | PendingOutput | FedOutput | None = None
        self.offset = 0

    def reserve(self, rows: int) -> None:
        """Room for ``rows`` more picks and network requests."""
        need = max(self.count, int(self.requests.count[0])) + rows
        if need <= len(self.picks):
            return
        cap = max(need, 2 * len(self.picks))
        for name in ("picks", "kinds", "vals"):
            old = getattr(self, name)
            new = np.zeros((cap, *old.shape[1:]), old.dtype)
            new[: len(old)] = old
            setattr(self, name, new)
        self.qdm = np.zeros((3, cap), np.float32)  # written by each apply, nothing to keep
        req = self.requests
        grown = L.make_requests(cap)
        for old_a, new_a in zip(req, grown, strict=True):
            if old_a.ndim and len(old_a) == len(req.nodes):
                new_a[: len(old_a)] = old_a
        grown.count[0] = req.count[0]
        self.requests = grown

    def reset(self) -> None:
        """Empty the batch for another gather, keeping its (possibly grown) buffers: every row a
        gather uses is written before it is read, so nothing needs clearing."""
        self.count = 0
        self.ooo = 0
        self.reverted = 0
        self.requests.count[0] = 0
        self.pending = None
        self.offset = 0

    @property
    def nn_count(self) -> int:
        return int(self.requests.count[0])

    def planes(self) -> PlanesBatch:
        n = self.nn_count
        return PlanesBatch(self.requests.masks[:n], self.requests.values[:n])


_NO_VALUES = np.zeros(0, np.float32)  # a batch without network results backs up no values


def _float32_rows(a: np.ndarray) -> np.ndarray:
    """``a`` itself when it is the C-contiguous float32 array compiled code takes (every backend's
    outputs are), else a copy that is."""
    if a.dtype == np.float32 and a.flags.c_contiguous:
        return a
    return np.ascontiguousarray(a, dtype=np.float32)


def params_array(params: SearchParams, root_black: bool, has_mlh: bool) -> np.ndarray:
    """``SearchParams`` as the float64 vector compiled code reads (``pick.P_*``)."""
    p = np.zeros(P_SIZE, np.float64)
    p[P_CPUCT], p[P_BASE], p[P_FACTOR] = params.cpuct, params.cpuct_base, params.cpuct_factor
    if params.root_has_own_cpuct_params:
        p[P_CPUCT_ROOT], p[P_BASE_ROOT] = params.cpuct_at_root, params.cpuct_base_at_root
        p[P_FACTOR_ROOT] = params.cpuct_factor_at_root
    else:
        p[P_CPUCT_ROOT], p[P_BASE_ROOT], p[P_FACTOR_ROOT] = p[P_CPUCT], p[P_BASE], p[P_FACTOR]
    p[P_FPU_ABS], p[P_FPU] = float(params.fpu_absolute), params.fpu_value
    if params.fpu_strategy_at_root == "same":
        p[P_FPU_ABS_ROOT], p[P_FPU_ROOT] = p[P_FPU_ABS], p[P_FPU]
    else:
        p[P_FPU_ABS_ROOT] = float(params.fpu_strategy_at_root == "absolute")
        p[P_FPU_ROOT] = params.fpu_value_at_root
    # lc0's GetDrawScore(is_odd_depth): +DrawScore when is_odd_depth == black to move at the root.
    ds = params.draw_score
    p[P_DRAW_EVEN] = ds if root_black is False else -ds
    p[P_DRAW_ODD] = ds if root_black is True else -ds
    p[P_MLH] = float(has_mlh)
    p[P_ML_SLOPE], p[P_ML_CAP] = params.moves_left_slope, params.moves_left_max_effect
    p[P_ML_A0], p[P_ML_A1] = params.moves_left_constant_factor, params.moves_left_scaled_factor
    p[P_ML_A2], p[P_ML_THR] = params.moves_left_quadratic_factor, params.moves_left_threshold
    p[P_NOISE_EPS] = params.noise_epsilon
    p[P_RESCALE_RATIO], p[P_RESCALE_DIFF] = params.wdl_rescale_ratio, params.wdl_rescale_diff
    p[P_RESCALE_MAX_S], p[P_RESCALE_ROOT_STM] = params.wdl_max_s, float(params.contempt_root_side)
    return p


def collisions_left(params: SearchParams, nodes: float) -> int:
    """lc0's ``CalculateCollisionsLeft`` (``gather.collision_budget``, compiled: the float32
    arithmetic in numpy scalars cost ~6 µs a batch)."""
    return int(
        G.collision_budget(
            float(nodes),
            params.max_collision_visits_scaling_start,
            params.max_collision_visits_scaling_end,
            params.max_collision_visits,
            params.max_collision_visits_scaling_power,
        )
    )


def minibatch_target(params: SearchParams, info: BackendInfo) -> int:
    """Positions a minibatch gathers at most (``MinibatchSize``, else the backend's choice)."""
    return max(1, params.minibatch_size or info.recommended_batch or 256)


def batches_in_flight(params: SearchParams, backend: object = None) -> int:
    """Minibatches whose visits may be in flight at once: lc0's ``Threads`` (each of its search
    threads holds one), at least two with ``SearchOverlap`` (the next one is gathered while the
    backend computes the last), one without. ``Threads`` 0 (auto) over ``roundrobin`` or
    ``multiplexing`` (``children``) keeps one more than it has children in flight, so every device
    has a batch queued while the next is gathered; over ``demux`` (``splits_every_batch``: each
    batch already reaches every device) two, as on one device: a third only made the tree's
    batches smaller (T82 over 2 H200s: mean 63.6 positions against 75.1, median 32 against 45;
    35.2k against 32.8k nodes/s, medians of 4 alternating rounds,
    bench/results/2026-11-29_h200x2-demuxsearch_d0b22d2)."""
    if not params.overlap:
        return 1
    if params.threads == 0:
        if getattr(backend, "splits_every_batch", False):
            return 2
        return max(2, len(getattr(backend, "children", ())) + 1)
    return max(2, params.threads)


def network_batches_outstanding(params: SearchParams, backend: object = None) -> int:
    """Network batches (each one or more minibatches joined) the search hands to the backend
    before one is backed up: two on one device (one computing, the next queued behind it; the
    minibatches gathered meanwhile wait and go together). A multi-device backend
    (``children``) takes every minibatch in flight as a batch of its own, so that each device
    has one queued: with two, roundrobin over 2 GPUs kept one batch on each, each GPU idle while
    its result was backed up (simulated T82 on H100, scripts/bench/search_timeline.py
    --sim-children 2 --max-outstanding 2 against 0, 4 rounds: roundrobin's devices busy 51-67 %
    -> 59-74 % at Threads 0, 46-68 % -> 71-83 % at Threads 4; demux unchanged, ~85-93 %)."""
    if getattr(backend, "children", None):
        return max(2, batches_in_flight(params, backend))
    return 2


def largest_batch(params: SearchParams, info: BackendInfo) -> int:
    """The most positions one network batch of a search can hold: a gathered minibatch (its
    last pick may add two) or one topped up to ``MaxPrefetch`` (lc0's prefetch)."""
    return max(minibatch_target(params, info) + 2, params.max_prefetch)


def task_workers(params: SearchParams, info: BackendInfo) -> int:
    """Task workers of the search thread: ``TaskWorkers`` when set (>= 0); -1 (lc0's default,
    "automatic") gives none. lc0 0.32.1's automatic rule is ``min(cores / max(Threads - 1, 1) - 1,
    4)`` on a GPU backend (``lc0_rule_task_workers``), but lc0py's hand-off costs more than a
    parallel scan saves: on the H100 host every net searched slower with it (TaskWorkers 0 vs 4,
    bench/results/2026-11-28_h100_9c6d7dd: maia-1900 64.1k vs 62.1k nps, res-20x256 81.1k vs
    65.0k), so automatic means serial until that changes."""
    if params.task_workers >= 0:
        return params.task_workers
    return 0


def lc0_rule_task_workers(params: SearchParams, info: BackendInfo) -> int:
    """lc0 0.32.1's automatic ``TaskWorkers``: none on a CPU backend, else
    ``min(cores / max(Threads - 1, 1) - 1, 4)`` (``Threads`` 0: lc0's 2 for a GPU backend)."""
    if getattr(info, "runs_on_cpu", False):
        return 0
    working = max((params.threads or 2) - 1, 1)
    return max(0, min((os.cpu_count() or 1) // working - 1, 4))


def split_round(
    picks: np.ndarray, start: int, end: int, workers: int, per_task: int
) -> list[tuple[int, int]]:
    """lc0's split of a round's picks among ``workers`` task workers and the search thread:
    ``clamp(leaves / per_task, 2, workers + 1)`` tasks of ``leaves / tasks`` non-collision
    picks each (rounded down), the search thread's (the last range) taking what is left."""
    leaves = np.flatnonzero(picks[start:end, 4] == 0)
    tasks = min(max(len(leaves) // max(1, per_task), 2), workers + 1)
    each = len(leaves) // tasks
    ranges = []
    lo = start
    for j in range(1, tasks):
        if each == 0:
            break
        hi = start + int(leaves[j * each - 1]) + 1
        ranges.append((lo, hi))
        lo = hi
    ranges.append((lo, end))
    return ranges


def prepare_for_search(backend: Backend, params: SearchParams) -> None:
    """Let the backend do its one-time work for the batch sizes a search with ``params`` sends
    (graph captures), at engine start rather than inside a timed ``go``."""
    prepare_backend(backend, largest_batch(params, backend.info))


class SearchWorker:
    """One search thread's worth of work on ``tree`` (the caller holds the tree lock, except
    while it waits for ``Batch.pending``)."""

    def __init__(
        self,
        tree: NodeTree,
        backend: Backend,
        params: SearchParams,
        cache: NNCache,
        input_format: int,
        prm: np.ndarray,
        stop_flag: np.ndarray,
        tablebase: TablebaseProbe | None = None,
    ) -> None:
        self.tree = tree
        self.tablebase = tablebase
        self.root_id = tree.root_id
        self.backend = backend
        self.params = params
        self.cache = cache
        self.input_format = input_format
        self.prm = prm
        self._stop_flag = stop_flag
        self.target = minibatch_target(params, backend.info)
        self.max_ooo = max(1, int(params.max_out_of_order_evals_factor * self.target))
        self._inv_temp = float(np.float32(1.0) / np.float32(params.policy_softmax_temp))
        self.stats = np.zeros(8, np.int64)  # gather.S_* counters
        self.batches = 0
        self._shared = np.zeros((256, 2), np.int32)  # shared collisions (node, multivisit)
        self._n_shared = 0
        # Batches whose results were backed up, reused by the next gathers (a fresh batch is
        # ~0.5 MB of buffers: allocating and first-touching them every minibatch cost ~8 % of
        # a search-only run)
        self._free: list[Batch] = []
        self._vtp = np.zeros((L.MAX_PATH - 76, 256), np.int32)
        # the pick's and the extension's scratch, once per worker rather than once a pick round
        self._pick_work = pick_workspace(len(self._vtp))
        self._extend_work = L.extend_workspace()
        self._executor: ThreadPoolExecutor | None = None
        self._feeder: Feeder | None = None
        self._fill = fill_code(params.history_fill)
        self._use_cache = cache.enabled
        board = tree.history.board
        chess960 = board.chess960
        ply0 = board.root().ply() if board.move_stack else board.ply()
        game = [B.pos_from_record(r, ply0 + i, chess960) for i, r in enumerate(tree.history.records)]
        self._positions = L.make_positions(game)
        # Gamma samples for the root's Dirichlet noise (the controller draws them when the root
        # is evaluated in this search; empty: no noise)
        self.root_noise = np.zeros(0, np.float32)
        # The compiled calls of every minibatch, through entry points resolved at their first call
        # (``fastcall``: numba's type matching of the tree's 18 arrays cost 20-41 us a call)
        self._gather_minibatch = Resolved(G.gather_minibatch)
        # lc0's task workers: the leaves of a large pick round scanned in parallel (tasks.py)
        self.task_workers = task_workers(params, backend.info)
        self._min_parallel = max(1, params.minimum_processing_work) if self.task_workers > 0 else 0
        self._staged = T.make_staged(self.target + 2 if self.task_workers > 0 else 1)
        self._task_positions = [self._positions] + [
            T.copy_positions(self._positions) for _ in range(self.task_workers)
        ]
        self._scans = [Resolved(T.scan_picks) for _ in range(self.task_workers + 1)]
        self._task_pool: TaskPool | None = None
        self.parallel_rounds = 0
        self._collect_collisions = Resolved(G.collect_collisions)
        self._cancel_collisions = Resolved(G.cancel_collisions)
        self._apply_results = Resolved(L.apply_results)
        self._backup_batch = Resolved(G.backup_batch)
        self._prefetch_core = Resolved(L.prefetch)
        self._prefetch_work = L.prefetch_workspace() if cache.enabled and params.max_prefetch > 0 else (
            np.zeros((1, 256), np.int32), np.zeros((1, 256), np.float32))

    def root_position(self) -> np.ndarray:
        """A copy of the root's core position (the row the compiled code replays paths from)."""
        return self._positions.hist[int(self._positions.meta[0]) - 1].copy()

    def close(self) -> None:
        """End the evaluation thread: queued batches are cancelled and the thread is joined (the
        search drains its evaluations first, so nothing is left running past the search); the
        task workers' threads end too."""
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None
        if self._feeder is not None:
            self._feeder.close()
            self._feeder = None
        if self._task_pool is not None:
            self._task_pool.close()
            self._task_pool = None

    def _scan_round(self, batch: Batch, start: int, end: int) -> None:
        """The picks ``[start, end)`` of a round staged by ``tasks.scan_picks``: lc0's split
        among the task workers (``TaskPool`` threads running the compiled scan without the GIL)
        and this thread (the last range)."""
        per_task = self.params.minimum_per_task_processing
        ranges = split_round(batch.picks, start, end, self.task_workers, per_task)
        pool = self._task_pool
        if pool is None:
            pool = self._task_pool = TaskPool(self.task_workers)
        args = (
            self.tree.arrays, self.root_id, batch.picks, start, self.cache.arrays, self._use_cache,
            self.params.two_fold_draws, self.input_format, self._fill,
            int(self.prm[P_TB_PIECES]), self._staged,
        )
        tasks = len(ranges) - 1
        for k in range(tasks):
            lo, hi = ranges[k]
            pool.start(k, partial(self._scan, k + 1, lo, hi, args))
        lo, hi = ranges[-1]
        try:
            self._scan(0, lo, hi, args)
        finally:
            for k in range(tasks):
                pool.wait(k)
        self.parallel_rounds += 1

    def _scan(self, task: int, lo: int, hi: int, args: tuple[object, ...]) -> None:
        t, root, picks, start, cache, use_cache, two_fold, input_format, fill, tb_pieces, staged = args
        self._scans[task](
            t, root, picks, start, lo, hi, self._task_positions[task], cache, use_cache, two_fold,
            input_format, fill, tb_pieces, staged,
        )

    def submit(self, batches: list[Batch]) -> None:
        """Hand ``batches`` to the backend as one network batch. Several minibatches gathered
        while the device was busy travel together (lc0's ``multiplexing`` backend joins its
        search threads' batches the same way): one launch of ``sum`` positions costs the device
        far less than that many small ones. With ``overlap``, an asynchronous backend (a GPU:
        its ``evaluate_async`` only queues the batch) is called from this thread, so the batch
        joins the device's queue behind the one in flight and the device never waits for the
        host; a host backend runs on the engine's evaluation thread while this thread gathers.
        Without ``overlap`` it runs when the worker waits for it (outside the tree lock, so
        ``stop`` and the watchdog are answered meanwhile)."""
        offset = 0
        for batch in batches:
            batch.offset = offset
            offset += batch.nn_count
        if len(batches) == 1:
            planes = batches[0].planes()
        else:
            planes = PlanesBatch.concat([b.planes() for b in batches])
        backend = self.backend
        pending: Future[NetworkOutput] | Deferred | PendingOutput | FedOutput
        if self.params.overlap and backend.info.asynchronous:
            if FEED_ASYNC_BACKENDS:
                if self._feeder is None:
                    self._feeder = Feeder(backend)
                pending = self._feeder.submit(planes)
            else:
                pending = backend.evaluate_async(planes)
        else:

            def evaluate() -> NetworkOutput:
                return backend.evaluate_async(planes).result()

            if self.params.overlap:
                if self._executor is None:
                    self._executor = ThreadPoolExecutor(1, thread_name_prefix="lc0py-eval")
                pending = self._executor.submit(evaluate)
            else:
                pending = Deferred(evaluate)
        for batch in batches:
            batch.pending = pending

    def gather(
        self, remaining_playouts: float, allowed: np.ndarray, best_root_child: int, room: int | None = None
    ) -> Batch:
        """``GatherMinibatch`` (compiled: ``gather.gather_minibatch``) of at most ``room``
        positions (default: the minibatch size); grows the tree and the batch when a pick round
        needs more room than they have."""
        params = self.params
        tree = self.tree
        root = self.root_id
        if self._free:
            batch = self._free.pop()
            batch.reset()
        else:
            batch = Batch(self.target + 2)  # the size prepare_for_search readies the backend for
        target = self.target if room is None else max(1, min(room, self.target))
        state = np.zeros(8, np.int64)
        cur_n = int(tree.arrays.n[root])
        state[G.G_LEFT] = collisions_left(params, min(cur_n, remaining_playouts))
        state[G.G_OOO_START] = self.stats[G.S_OOO]
        reverted = int(self.stats[G.S_REVERTED])
        while True:
            status = self._gather_minibatch(
                tree.arrays,
                root,
                self.prm,
                allowed,
                float(remaining_playouts),
                best_root_child,
                batch.picks,
                batch.kinds,
                batch.vals,
                batch.requests,
                self._positions,
                self.cache.arrays,
                self._use_cache,
                params.two_fold_draws,
                self.input_format,
                self._fill,
                params.sticky_endgames,
                params.out_of_order_eval,
                target,
                self.max_ooo,
                state,
                self.stats,
                self._vtp,
                self._pick_work,
                self._extend_work,
                self._stop_flag,
                self.root_noise,
                self._staged,
                self._min_parallel,
            )
            batch.count = int(state[G.G_COUNT])
            if status == G.GATHER_DONE:
                break
            if status == G.GATHER_SCAN:
                self._scan_round(batch, int(state[G.G_START]), int(state[G.G_END]))
                continue
            rows = int(state[G.G_NEED])
            tree.ensure_capacity(rows, rows * G.EDGES_PER_VISIT)
            batch.reserve(rows)
        batch.reverted = int(self.stats[G.S_REVERTED]) - reverted
        batch.ooo = int(self.stats[G.S_OOO] - state[G.G_OOO_START])
        self._probe_tablebase(batch)
        prefetch = self.params.max_prefetch
        self._prefetch(batch, prefetch if room is None else min(room, prefetch))
        return batch

    def _probe_tablebase(self, batch: Batch) -> None:
        """Finish the leaves the compiled extension left for the tables (KIND_TB_PROBE; lc0's
        ``ExtendNode``): a successful WDL probe makes a tablebase terminal (one ``tbhits``), a
        failed one (a table missing) extends the leaf as any other."""
        if self.tablebase is None:  # the compiled extension marks such leaves only with tables
            return
        pending = np.flatnonzero(batch.kinds[: batch.count] == L.KIND_TB_PROBE)
        if not len(pending):
            return
        root = self.root_id
        words = np.zeros(B.POS_WORDS, np.uint64)
        for i in pending:
            node = int(batch.picks[i, 0])
            L.tb_probe_position(self.tree.arrays, root, node, self._positions, words)
            wdl = self.tablebase.probe_wdl(B.board_from_pos(words))
            if wdl is not None:
                L.make_tablebase_terminal(self.tree.arrays, node, int(wdl))
                batch.kinds[i] = L.KIND_TERMINAL
                self.tablebase.hit()
                continue
            batch.reserve(1)
            self.tree.ensure_capacity(1, G.EDGES_PER_VISIT)
            L.extend_picks(
                self.tree.arrays, root, batch.picks, int(i), int(i) + 1, self._positions, self.cache.arrays,
                self._use_cache, self.params.two_fold_draws, self.input_format, self._fill, batch.kinds,
                batch.vals, batch.requests, self.prm, False, self._extend_work,
            )

    def _prefetch(self, batch: Batch, limit: int) -> None:
        """lc0's ``MaybePrefetchIntoCache``: a batch with fewer than ``limit`` (``MaxPrefetch``,
        or less for a minibatch joining others) network requests is topped up with positions
        the search will likely want next (into the NN cache only)."""
        used = batch.nn_count
        if self._stop_flag[0] or not self._use_cache or used == 0 or used >= limit:
            return
        batch.reserve(limit)
        pos = self._positions
        self._prefetch_core(
            self.tree.arrays,
            self.root_id,
            int(pos.meta[0]) - 1,
            limit - used,
            self.prm,
            pos,
            self.cache.arrays,
            batch.requests,
            self.input_format,
            self._fill,
            *self._prefetch_work,
        )

    def collect_collisions(self, batch: Batch) -> None:
        need = self._n_shared + batch.count
        if need > len(self._shared):
            grown = np.zeros((max(need, 2 * len(self._shared)), 2), np.int32)
            grown[: self._n_shared] = self._shared[: self._n_shared]
            self._shared = grown
        self._n_shared = int(self._collect_collisions(batch.picks, batch.count, self._shared, self._n_shared))

    def cancel_shared_collisions(self) -> None:
        self._cancel_collisions(self.tree.arrays, self.root_id, self._shared, self._n_shared)
        self._n_shared = 0

    def apply(self, batch: Batch, out: NetworkOutput, to_tree: bool) -> tuple[np.ndarray, ...]:
        """Store the batch's rows of ``out`` in the tree (``to_tree``) and the NN cache: one
        compiled call reading the backend's output arrays in place (policy logits at the legal
        moves, WDL, moves-left); returns the batch's q, d, m (its own buffers)."""
        policy, wdl = _float32_rows(out.policy), _float32_rows(out.wdl)
        moves_left = _float32_rows(out.moves_left)
        qdm = batch.qdm
        if self._use_cache:
            self.cache.reserve(batch.nn_count)  # it grows on demand, before the inserts
        self._apply_results(
            self.tree.arrays,
            batch.requests,
            policy,
            wdl,
            moves_left,
            batch.offset,
            self._inv_temp,
            self.cache.arrays,
            self._use_cache,
            to_tree,
            qdm[0],
            qdm[1],
            qdm[2],
        )
        return qdm[0], qdm[1], qdm[2]

    def complete(self, batch: Batch, out: NetworkOutput | None) -> None:
        """``FetchMinibatchResults`` + ``DoBackupUpdate``."""
        if out is not None and batch.nn_count:
            q, d, m = self.apply(batch, out, to_tree=True)
            if len(self.root_noise) and self.root_id in batch.requests.nodes[: batch.nn_count]:
                # FetchSingleNodeResult: the root's fresh priors get the noise before the sort
                N.apply_root_noise(
                    self.tree.arrays, self.root_id, self._positions, self.root_noise, self.prm[P_NOISE_EPS]
                )
        else:
            q = d = m = _NO_VALUES
        t = self.tree.arrays
        work = self._backup_batch(
            t,
            self.root_id,
            batch.picks,
            batch.kinds,
            batch.vals,
            batch.count,
            q,
            d,
            m,
            self.params.sticky_endgames,
            self.stats,
            self.prm,
        )
        if work or batch.ooo:
            self.cancel_shared_collisions()
            self.batches += 1
        batch.pending = None
        self._free.append(batch)  # backed up: its buffers serve the next gather

    def cancel_visits(self, batch: Batch) -> None:
        """Undo the visits in flight of a batch that will not be backed up."""
        G.cancel_visits(self.tree.arrays, self.root_id, batch.picks, batch.count)
