"""Classic lc0 MCTS in Python: PUCT selection, minibatch gathering, backup (docs/search.md).

One search = one worker thread running ``gather → evaluate → backup`` and one watchdog thread
that enforces time limits and answers ``stop`` even while the backend is busy:

* The tree is guarded by ``self._lock``; the worker releases it while it waits for the backend,
  so the watchdog can always read the tree and emit ``bestmove`` within milliseconds.
* Overlap: with ``params.overlap`` the next minibatch is gathered while the previous one is being
  evaluated (its leaves carry visits in flight, so new descents avoid them as lc0's second
  thread would). Host backends are driven from a helper thread so numpy/BLAS work overlaps
  with the Python gathering.
* Selection follows §3 exactly (cpuct growth, FPU reduction, strict ``>`` in P order), visits in
  flight only enlarge the PUCT denominator (§4), the collision budget and out-of-order limit
  follow §5, terminal positions and cache hits are backed up at once (out of order).

Results are reported through ``SearchCallbacks`` as ``SearchInfo`` snapshots; formatting (UCI
``info`` lines, benchmark lines) belongs to the callers.
"""

from __future__ import annotations

import gc
import math
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import chess
import numpy as np

from lc0py.backends.base import Backend, NetworkOutput
from lc0py.chess.encoding import PositionRecord, encode_history_parts, parts_batch
from lc0py.chess.history import load_board, push_record, record_after
from lc0py.search.movegen import legal_moves_indexed, pack, to_move
from lc0py.search.nncache import CacheEntry, NNCache, position_key
from lc0py.search.node import TERMINAL, Node
from lc0py.search.params import SearchParams
from lc0py.search.priors import segment_priors
from lc0py.search.tree import NodeTree

_NEG_INF = float("-inf")
_INF = float("inf")
_COLLISION_SLACK_FACTOR = 2  # collisions allowed per new leaf in one gather (plus 8)


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


@dataclass
class SearchCallbacks:
    on_info: Callable[[SearchInfo], None] = lambda info: None
    on_bestmove: Callable[[chess.Move | None, chess.Move | None], None] = lambda m, p: None
    on_message: Callable[[str], None] = lambda text: None  # "info string" texts
    on_verbose: Callable[[Search], None] = lambda search: None  # VerboseMoveStats hook


@dataclass
class _Leaf:
    node: Node
    idx: list[int]
    moves: list[int]
    key: object
    depth: int


@dataclass
class _Batch:
    leaves: list[_Leaf] = field(default_factory=list)
    # Input planes of the leaves (``encode_history_parts``), joined per batch in ``_submit``.
    blocks: list[np.ndarray] = field(default_factory=list)
    aux: list[list[int]] = field(default_factory=list)
    rule50: list[float] = field(default_factory=list)
    collisions: list[Node] = field(default_factory=list)
    pending: Future[NetworkOutput] | None = None
    abandoned: bool = False


class _GcPause:
    """Automatic garbage collection off while any search runs (the collector would rescan the
    growing tree again and again: ~15% of search time), frozen objects afterwards."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0
        self._was_enabled = False

    def __enter__(self) -> None:
        with self._lock:
            if self._count == 0:
                self._was_enabled = gc.isenabled()
                gc.disable()
            self._count += 1

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._count -= 1
            if self._count == 0 and self._was_enabled:
                # Everything alive now (the kept tree, the NN cache) goes to the permanent
                # generation: later collections do not rescan it (a full pass over a 20k-node
                # tree took 0.2-0.6 s here, enough to lose on time). Trees hold their parents
                # weakly, so dropped subtrees are still freed by reference counting.
                gc.freeze()
                gc.enable()


_GC_PAUSE = _GcPause()
_EXECUTORS: dict[int, tuple[Backend, ThreadPoolExecutor]] = {}
_EXECUTORS_LOCK = threading.Lock()


def _executor_for(backend: Backend) -> ThreadPoolExecutor:
    """One evaluation thread per backend, shared by all searches using it."""
    with _EXECUTORS_LOCK:
        entry = _EXECUTORS.get(id(backend))
        if entry is None or entry[0] is not backend:
            entry = (backend, ThreadPoolExecutor(1, thread_name_prefix="lc0py-eval"))
            _EXECUTORS[id(backend)] = entry
        return entry[1]


class Search:
    """One search of ``tree.root``. ``start()`` runs it in threads, ``run()`` blocks until done."""

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
    ) -> None:
        self.tree = tree
        self.root = tree.root
        self.history = tree.history
        self.backend = backend
        self.params = params
        self.limits = limits
        self.cache = cache
        self.cb = callbacks or SearchCallbacks()
        self.start_time = time.perf_counter() if start_time is None else start_time
        self.input_format = backend.info.input_format if input_format is None else input_format
        self.target = params.minibatch_size or backend.info.recommended_batch or 256
        self._lock = tree.lock  # shared by every search of this tree
        self._stop = threading.Event()  # worker: stop gathering
        self._done = threading.Event()  # bestmove emitted
        self._inflight: list[_Batch] = []  # submitted, not yet backed up (oldest first)
        self._released = False  # bestmove sent / ponder stopped: the tree is no longer ours
        self._responded = False
        self._bestmove_wanted = not limits.infinite
        self.initial_visits = self.root.n
        self.playouts = 0
        self.nn_evals = 0
        self.sum_depth = 0
        self.max_depth = 0
        self.first_playout_time: float | None = None
        self._last_info: tuple[object, int, int] | None = None
        self._last_info_time = 0.0
        self.error: BaseException | None = None
        self.stop_reason = ""
        root_moves = {pack(m) for m in limits.searchmoves}
        self._root_filter: set[int] | None = root_moves or None
        self._threads: list[threading.Thread] = []
        self._remaining_estimate: float | None = None
        self._has_mlh = bool(backend.info.has_moves_left)  # moves-left utility possible
        self._cs_cache: dict[int, float] = {}  # N -> cpuct(N)·sqrt(max(N−1, 1)), non-root params
        self._sel_tag = object()  # marks ``Node.sel`` entries made by this search (see ``_descend``)
        # Leaves get their position from their parent's record (``Node.rec``) on a scratch board:
        # one python-chess push per new leaf, no pops, ``history`` stays at the root.
        self._base_records: list[PositionRecord] = list(self.history._records)
        self._scratch = self.history.board.copy(stack=False)
        self._chess960 = self._scratch.chess960
        if self.root.rec is None:
            self.root.rec = self._base_records[-1]
        self._root_white = self.history.board.turn == chess.WHITE
        # The root needs the general (slow) selection only for searchmoves or root-own params.
        self._special_root = (
            self._root_filter is not None
            or params.root_has_own_cpuct_params
            or params.fpu_strategy_at_root != "same"
            or params.draw_score != 0.0
        )

    # ------------------------------------------------------------------ public control ----
    def start(self) -> None:
        """Run the search in a worker thread plus a watchdog; returns at once."""
        worker = threading.Thread(target=self._worker, name="lc0py-search", daemon=True)
        watchdog = threading.Thread(target=self._watchdog, name="lc0py-watchdog", daemon=True)
        self._threads = [worker, watchdog]
        worker.start()
        watchdog.start()

    def run(self) -> None:
        """Search until a limit is reached (blocking); ``limits.infinite`` is not allowed."""
        self.start()
        self.wait()

    def stop(self) -> None:
        """Stop now and emit ``bestmove`` (also ends an infinite search / ponder)."""
        self._bestmove_wanted = True
        self._stop.set()
        self._finish()

    def stop_silently(self) -> None:
        """Stop without emitting ``bestmove`` (ponderhit restarts the search)."""
        with self._lock:
            self._responded = True
            self._release_tree()
        self._stop.set()
        self._done.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until ``bestmove`` was sent (the tree is then free for the next search)."""
        return self._done.wait(timeout)

    def join(self, timeout: float | None = None) -> None:
        """Also wait for the worker thread (e.g. an abandoned batch still in the backend)."""
        for t in self._threads:
            t.join(timeout)

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def elapsed_ms(self) -> int:
        return int((time.perf_counter() - self.start_time) * 1000)

    # ------------------------------------------------------------------ threads ----
    def _worker(self) -> None:
        """gather → submit → (gather the next while it runs) → complete the oldest → …"""
        with _GC_PAUSE:
            self._work()

    def _work(self) -> None:
        inflight = self._inflight
        try:
            with self._lock:
                if self._root_has_no_moves():
                    self._stop.set()
            while not self._stop.is_set():
                with self._lock:
                    if self._released:
                        break
                    before = self.playouts
                    batch = self._gather()
                    if batch.leaves:
                        self._submit(batch)
                        inflight.append(batch)
                    elif batch.collisions and inflight:
                        # Collisions with a batch in flight are cancelled when it is backed up.
                        inflight[-1].collisions.extend(batch.collisions)
                    else:
                        self._cancel(batch)
                        self._after_batch()
                        if not inflight and (self.playouts == before or self._no_progress()):
                            self._limit_reached("no progress")
                        if not inflight:
                            continue
                if len(inflight) >= 2 or not self.params.overlap or self._stop.is_set() or not batch.leaves:
                    self._complete_oldest()
            if not self._bestmove_wanted:
                while self._complete_oldest():  # infinite search at its limit: keep the tree whole
                    pass
        except BaseException as exc:  # backend crash etc.: report, answer bestmove anyway
            self.error = exc
            self.cb.on_message(f"error in search: {type(exc).__name__}: {exc}")
            self._bestmove_wanted = True
            self._stop.set()
        finally:
            if self._stop.is_set() and self._bestmove_wanted:
                self._finish()

    def _release_tree(self) -> None:
        """(lock held) Give the tree back: batches still in the backend are abandoned and their
        visits in flight cancelled, so the next search can start at once on a consistent tree."""
        self._released = True
        for batch in self._inflight:
            batch.abandoned = True
            if batch.pending is not None:
                batch.pending.cancel()  # not started yet: drop it (the worker ignores it)
            for leaf in batch.leaves:
                self._cancel_path(leaf.node)
            self._cancel(batch)
        self._inflight.clear()

    def _watchdog(self) -> None:
        """Every 50 ms, and exactly at the deadline: time limit, ``stop``, 5-second info."""
        while not self._done.is_set():
            timeout = 0.05
            deadline = self.limits.deadline_ms
            if deadline is not None and not self.limits.infinite:
                left = (deadline - (time.perf_counter() - self.start_time) * 1000) / 1000
                timeout = max(0.0005, min(timeout, left))
            if self._done.wait(timeout):
                return
            if self._stop.is_set() and self._bestmove_wanted:
                self._finish()
                return
            with self._lock:
                self._check_time_limits()
                if time.perf_counter() - self._last_info_time > 5.0 and self.playouts > 0:
                    self._send_info()

    # ------------------------------------------------------------------ stopping ----
    def _limit_reached(self, reason: str) -> None:
        if self._stop.is_set():
            return
        self.stop_reason = reason
        self._stop.set()
        if self.limits.infinite and not self._bestmove_wanted:
            self.cb.on_message("WARNING: Search has reached limit and does not make any progress.")

    def _no_progress(self) -> bool:
        lim = self.limits
        return lim.nodes is not None and self.root.n >= lim.nodes

    def _check_time_limits(self) -> None:
        lim = self.limits
        if lim.deadline_ms is not None and not lim.infinite:
            if (time.perf_counter() - self.start_time) * 1000 >= lim.deadline_ms:
                self._limit_reached("time")

    def _check_stoppers(self) -> None:
        """After every batch (§11)."""
        lim = self.limits
        root = self.root
        if lim.nodes is not None and root.n >= lim.nodes:
            self._limit_reached("nodes")
        if lim.depth is not None and self.playouts and self._avg_depth() >= lim.depth:
            self._limit_reached("depth")
        if lim.mate is not None and self._mate_found(lim.mate):
            self._limit_reached("mate")
        self._check_time_limits()
        if lim.smart_pruning and not lim.infinite and self.params.smart_pruning_factor > 0:
            self._smart_pruning()

    def _mate_found(self, mate: int) -> bool:
        for child in self._root_children():
            if child.terminal == TERMINAL and child.wl > 0 and round(child.m) // 2 + 1 <= mate:
                return True
        return False

    def _smart_pruning(self) -> None:
        root = self.root
        if root.moves is None:
            return
        allowed = self._allowed_root_edges()
        if len(allowed) == 1 and self.limits.mate is None:
            self._limit_reached("only move")
            return
        for i in allowed:
            c = root.children[i]
            if c is not None and c.terminal == TERMINAL and c.wl > 0:
                self._limit_reached("proven win")
                return
        if self.first_playout_time is None:
            return
        now = time.perf_counter()
        since_first = (now - self.first_playout_time) * 1000
        if since_first < 200:
            return
        remaining = math.inf
        if self.limits.deadline_ms is not None:
            nps = 1000 * (self.playouts + 300) / max(since_first, 1) + 1
            remaining = max(0.0, (self.limits.deadline_ms - self.elapsed_ms()) / 1000) * nps
        if self.limits.nodes is not None:
            remaining = min(remaining, max(0, self.limits.nodes - root.n))
        if remaining == math.inf:
            return
        remaining /= self.params.smart_pruning_factor
        self._remaining_estimate = remaining
        visits = sorted((root.children[i].n for i in allowed if root.children[i] is not None), reverse=True)
        if len(visits) >= 2 and visits[0] - visits[1] > remaining:
            self._limit_reached("smart pruning")
        elif len(visits) == 1 and visits[0] > remaining:
            self._limit_reached("smart pruning")

    # ------------------------------------------------------------------ gathering ----
    def _root_has_no_moves(self) -> bool:
        root = self.root
        if root.moves is not None:
            return len(root.moves) == 0
        return not any(self.history.board.generate_legal_moves())

    def _allowed_root_edges(self) -> list[int]:
        root = self.root
        assert root.moves is not None
        if self._root_filter is None:
            return list(range(len(root.moves)))
        return [i for i, mv in enumerate(root.moves) if mv in self._root_filter]

    def _root_children(self) -> list[Node]:
        root = self.root
        if root.moves is None:
            return []
        return [c for i in self._allowed_root_edges() if (c := root.children[i]) is not None]

    def _gather(self) -> _Batch:
        """Collect up to ``target`` new leaves (§5); terminals and cache hits are backed up."""
        params = self.params
        root = self.root
        batch = _Batch()
        target = self.target
        estimate = self.root.n
        if self._remaining_estimate is not None:
            estimate = min(estimate, self._remaining_estimate)
        if self.limits.nodes is not None:
            estimate = min(estimate, max(0, self.limits.nodes - root.n))
        # lc0's budget (§5), capped at one collision per leaf of the batch: lc0 assigns collided
        # visits many at a time, here each costs a full descent (documented deviation).
        collision_budget = min(params.collision_budget(estimate), max(1, target))
        ooo_left = max(1, int(params.max_out_of_order_evals_factor * target))
        budget = math.inf if self.limits.nodes is None else self.limits.nodes - root.n - root.nif
        self._gather_loop(batch, target, budget, collision_budget, ooo_left)
        return batch

    def _gather_loop(
        self, batch: _Batch, target: int, budget: float, collision_budget: int, ooo_left: int
    ) -> None:
        leaves = batch.leaves
        while len(leaves) < target and budget > 0:
            leaf, depth = self._descend()
            if leaf is None:
                break
            if leaf.terminal:
                self._backup(leaf, leaf.wl, leaf.d, leaf.m, depth)
                budget -= 1
                ooo_left -= 1
                if ooo_left <= 0:
                    break
                continue
            if leaf.nif > 1:  # someone else is evaluating it: collision (§4)
                batch.collisions.append(leaf)
                collision_budget -= 1
                # Each collision costs a whole descent here (lc0 assigns collided visits in bulk),
                # and a gather that finds no new leaf achieves nothing: allow at most a few more
                # collisions than new leaves found so far.
                if collision_budget <= 0 or len(batch.collisions) > _COLLISION_SLACK_FACTOR * len(leaves) + 8:
                    break
                continue
            budget -= 1
            if self._visit_new_leaf(leaf, depth, batch):
                ooo_left -= 1
                if ooo_left <= 0:
                    break

    def _descend(self) -> tuple[Node | None, int]:
        """Walk from the root by PUCT, adding a visit in flight along the path.

        The common case (no draw score, no moves-left utility) is ``_select`` inlined: this loop
        is the search's hottest code.
        """
        root = self.root
        node = root
        node.nif += 1
        depth = 1
        p = self.params
        ds = p.draw_score
        special_root = self._special_root
        general = bool(ds) or self._has_mlh or p.fpu_absolute
        cs_cache = self._cs_cache
        cpuct, cfactor, cbase = p.cpuct, p.cpuct_factor, p.cpuct_base
        fpu_value = p.fpu_value
        sqrt, log = math.sqrt, math.log
        tag = self._sel_tag
        while node.moves is not None and not node.terminal:
            sel = node.sel
            if sel is not None and sel[0] is tag:
                # Only the child chosen last time has changed here since (one more visit in
                # flight): if it still beats the runner-up, the full scan would choose it again;
                # if it fell below a runner-up that strictly beats the third best, the
                # runner-up (unchanged) is the scan's choice.
                _, c, prior, second, c2, third, cs, fpu = sel
                cn = c.n
                sc = (c.wl if cn else fpu) + cs * prior / (1 + cn + c.nif)
                if sc > second:
                    c.nif += 1
                    node = c
                    depth += 1
                    continue
                if c2 is not None and second > sc and second > third:
                    node.sel = (tag, c2, node.p[c2.index], sc if sc > third else third, None, _INF, cs, fpu)
                    c2.nif += 1
                    node = c2
                    depth += 1
                    continue
            if node is root and special_root:
                i = self._select_root(node)
                if i < 0:
                    self._cancel_path(node)
                    return None, depth
                child = node.ensure_child(i)
            elif general:
                child = self._select(node, p, ds)
            else:
                n = node.n
                cs = cs_cache.get(n)
                if cs is None:
                    cs = (cpuct + cfactor * log((n + cbase) / cbase)) * sqrt(n - 1 if n > 2 else 1)
                    cs_cache[n] = cs
                fpu = -node.wl - fpu_value * sqrt(node.visited_p)
                # best, runner-up and third score; ``child2`` is the runner-up's node (None: an
                # untouched edge, which is never promoted without a scan)
                best = second = third = _NEG_INF
                child = child2 = None
                P = node.p
                for c, prior in zip(node.children, P):  # noqa: B905 - equal lengths, hottest loop
                    if c is None:  # the touched prefix ends here
                        break
                    cn = c.n
                    sc = (c.wl if cn else fpu) + cs * prior / (1 + cn + c.nif)
                    if sc > best:
                        third = second
                        second = best
                        child2 = child
                        best = sc
                        child = c
                    elif sc > second:
                        third = second
                        second = sc
                        child2 = c
                    elif sc > third:
                        third = sc
                touched = node.touched
                if touched < len(P):
                    sc = fpu + cs * P[touched]
                    if sc > best:
                        third = second
                        second = best
                        child2 = child
                        child = node.ensure_child(touched)
                        if touched + 1 < len(P):  # the next untouched edge is a candidate now
                            sc = fpu + cs * P[touched + 1]
                            if sc > second:
                                third = second
                                second = sc
                                child2 = None
                            elif sc > third:
                                third = sc
                    elif sc > second:
                        third = second
                        second = sc
                        child2 = None
                    elif sc > third:
                        third = sc
                assert child is not None
                node.sel = (tag, child, P[child.index], second, child2, third, cs, fpu)
            child.nif += 1
            node = child
            depth += 1
        return node, depth

    def _cpuct_scaled(self, node: Node, at_root: bool) -> float:
        p = self.params
        if at_root and p.root_has_own_cpuct_params:
            c, base, factor = p.cpuct_at_root, p.cpuct_base_at_root, p.cpuct_factor_at_root
        else:
            c, base, factor = p.cpuct, p.cpuct_base, p.cpuct_factor
        n = node.n
        cpuct = c + factor * math.log((n + base) / base)
        return cpuct * math.sqrt(max(n - 1, 1))

    def _fpu(self, node: Node, at_root: bool) -> float:
        p = self.params
        absolute, value = p.fpu_absolute, p.fpu_value
        if at_root and p.fpu_strategy_at_root != "same":
            absolute, value = p.fpu_strategy_at_root == "absolute", p.fpu_value_at_root
        if absolute:
            return value
        q = -node.wl
        if p.draw_score:
            q += self._draw_score_at(node) * node.d
        return q - value * math.sqrt(node.visited_p)

    def _draw_score_at(self, node: Node) -> float:
        """``ds`` for the side to move at ``node`` (DrawScore is from white's view)."""
        depth = 0
        x = node
        while x.parent is not None:
            depth += 1
            x = x.parent
        white = self._root_white
        if depth % 2:
            white = not white
        return self.params.draw_score if white else -self.params.draw_score

    def _select(self, node: Node, p: SearchParams, ds: float) -> Node:
        """PUCT over the touched prefix plus the first untouched edge (module doc of ``node``)."""
        n = node.n
        cs = self._cs_cache.get(n)
        if cs is None:
            cs = (p.cpuct + p.cpuct_factor * math.log((n + p.cpuct_base) / p.cpuct_base)) * math.sqrt(
                n - 1 if n > 2 else 1
            )
            self._cs_cache[n] = cs
        if p.fpu_absolute:
            fpu = p.fpu_value
        else:
            fpu = -node.wl - p.fpu_value * math.sqrt(node.visited_p)
            if ds:
                fpu += self._draw_score_at(node) * node.d
        if ds or (self._has_mlh and abs(node.wl) > p.moves_left_threshold):
            return self._select_general(node, cs, fpu)
        P = node.p
        children = node.children
        touched = node.touched
        best = _NEG_INF
        bi = 0
        for i in range(touched):
            c = children[i]
            cn = c.n  # type: ignore[union-attr]
            s = (c.wl if cn else fpu) + cs * P[i] / (1 + cn + c.nif)  # type: ignore[union-attr]
            if s > best:
                best = s
                bi = i
        if touched < len(P) and fpu + cs * P[touched] > best:
            bi = touched
        if bi == touched:
            return node.ensure_child(bi)
        return children[bi]  # type: ignore[return-value]

    def _mutil(self, node: Node, child: Node, q: float) -> float:
        """Moves-left utility (§10); 0 unless the parent is nearly decided."""
        p = self.params
        if not self._has_mlh or abs(node.wl) <= p.moves_left_threshold or child.n == 0:
            return 0.0
        m = max(
            -p.moves_left_max_effect, min(p.moves_left_max_effect, p.moves_left_slope * (child.m - node.m))
        )
        qq = max(0.0, abs(q) - p.moves_left_threshold) / (1 - p.moves_left_threshold)
        sign = -1.0 if q > 0 else (1.0 if q < 0 else 0.0)
        return (
            m
            * sign
            * (
                p.moves_left_constant_factor
                + p.moves_left_scaled_factor * qq
                + p.moves_left_quadratic_factor * qq * qq
            )
        )

    def _score_edges(
        self, node: Node, cs: float, fpu: float, allowed: Sequence[int] | None = None
    ) -> list[tuple[int, float, float]]:
        """(edge, Q used, U) for each edge considered (general, slow path)."""
        p = self.params
        ds = self._draw_score_at(node) if p.draw_score else 0.0
        out = []
        edges = range(len(node.p)) if allowed is None else allowed
        for i in edges:
            c = node.children[i]
            cn = c.n if c is not None else 0
            nif = c.nif if c is not None else 0
            q = (c.wl + ds * c.d) if (c is not None and cn) else fpu
            u = cs * node.p[i] / (1 + cn + nif)
            mu = self._mutil(node, c, q) if c is not None else 0.0
            out.append((i, q + mu, u))
        return out

    def _select_general(self, node: Node, cs: float, fpu: float) -> Node:
        best = _NEG_INF
        bi = 0
        for i, q, u in self._score_edges(node, cs, fpu, range(min(node.touched + 1, len(node.p)))):
            if q + u > best:
                best, bi = q + u, i
        return node.ensure_child(bi)

    def _select_root(self, root: Node) -> int:
        cs = self._cpuct_scaled(root, True)
        fpu = self._fpu(root, True)
        allowed = self._allowed_root_edges() if self._root_filter is not None else None
        best = _NEG_INF
        bi = -1
        for i, q, u in self._score_edges(root, cs, fpu, allowed):
            if q + u > best:
                best, bi = q + u, i
        return bi

    # ------------------------------------------------------------------ leaves ----
    def _visit_new_leaf(self, leaf: Node, depth: int, batch: _Batch) -> bool:
        """Expand a fresh leaf. Returns True if it was resolved out of order (terminal / cache).

        The leaf's position is its parent's record plus one move, played on a scratch board
        (the parent was expanded, so it has a record); the records of the path give the history
        for repetitions and the input planes.
        """
        root = self.root
        if leaf is root:
            return self._resolve_leaf(leaf, depth, batch, self.history.board, self._base_records, True)
        path: list[PositionRecord] = []
        ref = leaf._parent
        x = ref() if ref is not None else None
        parent = x
        while x is not root and x is not None:
            path.append(x.rec)  # type: ignore[arg-type]
            ref = x._parent
            x = ref() if ref is not None else None
        path.reverse()
        recs = self._base_records + path
        board = self._scratch
        rec = leaf.rec
        if rec is None:
            if self._chess960:  # python-chess plays Chess960 castling
                load_board(board, parent.rec)  # type: ignore[union-attr,arg-type]
                rec = push_record(board, leaf.move, recs)  # type: ignore[arg-type]
                leaf.rec = rec
                recs.append(rec)
                return self._resolve_leaf(leaf, depth, batch, board, recs, False)
            rec = record_after(parent.rec, pack(leaf.move), recs)  # type: ignore[union-attr,arg-type]
            leaf.rec = rec
        load_board(board, rec)
        recs.append(rec)
        return self._resolve_leaf(leaf, depth, batch, board, recs, False)

    def _resolve_leaf(
        self,
        leaf: Node,
        depth: int,
        batch: _Batch,
        board: chess.Board,
        recs: list[PositionRecord],
        is_root: bool,
    ) -> bool:
        if not is_root:
            draw_m = self._draw_by_rule(depth, board, recs)
            if draw_m is not None:
                if any(board.generate_legal_moves()):
                    leaf.make_terminal(0.0, 1.0, draw_m)
                else:
                    self._mate_or_stalemate(leaf, board)
                self._set_bounds(leaf)
                self._backup(leaf, leaf.wl, leaf.d, leaf.m, depth)
                return True
        # An exact key, not ``history.key()``: Python's int hash is modulo 2^61-1, so bitboards
        # with a piece on h8 and on c1 hash alike (1<<63 ≡ 4) and positions would be mixed up.
        last = recs[-1]
        key = position_key(last.key, last.repetitions)
        entry = self.cache.get(key)
        if entry is not None:
            q, d, m = entry[0], entry[1], entry[2]
            leaf.expand(CacheEntry.moves(entry), CacheEntry.priors(entry))
            leaf.v = -q
            self._backup(leaf, -q, d, m, depth)
            return True
        fill = self.params.history_fill
        blocks, aux, rule50, transform = encode_history_parts(recs, self.input_format, fill)
        moves, idx = legal_moves_indexed(board, transform)
        if not moves:
            self._mate_or_stalemate(leaf, board)
            self._set_bounds(leaf)
            self._backup(leaf, leaf.wl, leaf.d, leaf.m, depth)
            return True
        batch.leaves.append(_Leaf(leaf, idx, moves, key, depth))
        batch.blocks += blocks
        batch.aux.append(aux)
        batch.rule50.append(rule50)
        return False

    def _set_bounds(self, node: Node) -> None:
        """StickyEndgames (§6), proven results only: a parent with a move into a proven win for
        its side to move, or whose moves are all proven, becomes proven too; repeated upwards.
        The root is never made terminal. (lc0's "can't win/can't lose" bounds are not kept.)"""
        if not self.params.sticky_endgames:
            return
        while True:
            parent = node.parent
            if parent is None or parent is self.root or parent.moves is None or parent.terminal:
                return
            if node.wl > 0:  # a winning move for the parent's side to move
                parent.make_proven(-1.0, 0.0, node.m + 1.0)
            else:
                kids = parent.children
                if parent.touched < len(kids) or any(c is None or not c.terminal for c in kids):
                    return
                best = max(c.wl for c in kids)  # every move is proven: the best of them
                if best < 0:
                    parent.make_proven(1.0, 0.0, max(c.m for c in kids) + 1.0)  # longest loss
                else:
                    parent.make_proven(0.0, 1.0, min(c.m for c in kids if c.wl == 0) + 1.0)
            node = parent

    @staticmethod
    def _mate_or_stalemate(leaf: Node, board: chess.Board) -> None:
        if board.is_check():
            leaf.make_terminal(1.0, 0.0, 0.0)  # the player who moved in gave mate
        else:
            leaf.make_terminal(0.0, 1.0, 0.0)

    def _draw_by_rule(
        self, depth: int, board: chess.Board | None = None, records: Sequence[PositionRecord] | None = None
    ) -> float | None:
        """Plies-left ``M`` if the leaf is a draw by rule (§6, docs/input-encoding.md §7), else None.
        ``board``/``records``: the leaf's position and game (default: ``history``'s)."""
        if board is None or records is None:
            board, records = self.history.board, self.history.records
        if not (board.pawns | board.rooks | board.queens) and board.is_insufficient_material():
            return 0.0
        if board.halfmove_clock >= 100:
            return 0.0
        reps = records[-1].repetitions
        if reps >= 2:
            return 0.0
        if reps == 1 and self.params.two_fold_draws:
            ply_in_tree = depth - 1
            key = records[-1].key
            for back in range(4, len(records), 2):
                if records[-1 - back].key == key:
                    if ply_in_tree >= 4 and ply_in_tree >= back:
                        return float(back)
                    break
        return None

    # ------------------------------------------------------------------ evaluation ----
    def _submit(self, batch: _Batch) -> None:
        """Queue the batch on the backend's own thread: host backends (numpy) then compute while
        this thread gathers, and calls from consecutive searches never overlap (a backend is not
        thread-safe)."""
        planes = parts_batch(batch.blocks, batch.aux, batch.rule50)
        backend = self.backend
        batch.pending = _executor_for(backend).submit(lambda: backend.evaluate_async(planes).result())

    def _complete_oldest(self) -> bool:
        with self._lock:
            batch = self._inflight[0] if self._inflight and not self._released else None
        if batch is None:
            return False
        self._complete(batch)
        return True

    def _complete(self, batch: _Batch) -> None:
        """Wait for ``batch`` (the oldest in flight), then expand and back up its leaves."""
        assert batch.pending is not None
        if batch.abandoned and batch.pending.cancelled():
            return
        try:
            out = batch.pending.result()  # outside the lock: the backend may take long
        except CancelledError:
            return
        with self._lock:
            if batch.abandoned:  # the search answered meanwhile: keep the evaluations only
                self._apply(batch, out, cache_only=True)
                return
            self._inflight.remove(batch)
            self._apply(batch, out)
            self._cancel(batch)
            self._after_batch()

    def _apply(self, batch: _Batch, out: NetworkOutput, cache_only: bool = False) -> None:
        leaves = batch.leaves
        counts = np.fromiter((len(x.moves) for x in leaves), dtype=np.int64, count=len(leaves))
        rows = np.repeat(np.arange(len(leaves)), counts)
        flat: list[int] = []
        flat_moves: list[int] = []
        for x in leaves:
            flat.extend(x.idx)
            flat_moves.extend(x.moves)
        flat_idx = np.array(flat, dtype=np.intp)
        logits = out.policy[rows, flat_idx]
        p, order = segment_priors(logits, counts, self.params.policy_softmax_temp, self.params.fast_math)
        # Whole-batch sorting and packing; per leaf only slices (the cache's byte strings are
        # those of ``CacheEntry.make``: native uint16 moves and float32 priors).
        p_sorted_np = p[order]
        moves_np = np.array(flat_moves, dtype=np.uint16)[order]
        p_sorted = p_sorted_np.tolist()
        moves_sorted = moves_np.tolist()
        p_bytes = p_sorted_np.astype(np.float32, copy=False).tobytes()
        m_bytes = moves_np.tobytes()
        q = out.q.tolist()
        d = out.wdl[:, 1].tolist()
        m = out.moves_left.tolist()
        start = 0
        put = self.cache.put
        for b, leaf in enumerate(leaves):
            end = start + len(leaf.moves)
            put(leaf.key, (q[b], d[b], m[b], m_bytes[2 * start : 2 * end], p_bytes[4 * start : 4 * end]))
            if not cache_only:
                node = leaf.node
                node.expand(moves_sorted[start:end], p_sorted[start:end])
                node.v = -q[b]
                self._backup(node, -q[b], d[b], m[b], leaf.depth)
            start = end
        if not cache_only:
            self.nn_evals += len(leaves)

    def _cancel(self, batch: _Batch) -> None:
        for leaf in batch.collisions:
            self._cancel_path(leaf)
        batch.collisions.clear()

    @staticmethod
    def _cancel_path(node: Node | None) -> None:
        while node is not None:
            node.nif -= 1
            node.sel = None
            node = node.parent

    def _backup(self, node: Node | None, v: float, d: float, m: float, depth: int) -> None:
        """§2: running means up to the root, sign flip and ``m + 1`` per ply."""
        while node is not None:
            if node.terminal:
                v, d, m = node.wl, node.d, node.m
            n1 = node.n + 1
            node.wl += (v - node.wl) / n1
            node.d += (d - node.d) / n1
            node.m += (m - node.m) / n1
            node.n = n1
            node.nif -= 1
            node.sel = None  # its N/Q and a child's changed: ``_descend`` must scan it again
            ref = node._parent  # the ``parent`` property, inlined (hot loop)
            parent = ref() if ref is not None else None
            if n1 == 1 and parent is not None:
                parent.visited_p += parent.p[node.index]
            v = -v
            m += 1.0
            node = parent
        self.playouts += 1
        self.sum_depth += depth
        if depth > self.max_depth:
            self.max_depth = depth
        if self.first_playout_time is None:
            self.first_playout_time = time.perf_counter()

    def _after_batch(self) -> None:
        self._check_stoppers()
        self._maybe_send_info()

    # ------------------------------------------------------------------ results ----
    def _avg_depth(self) -> int:
        return max(1, self.sum_depth // self.playouts) if self.playouts else 0

    def ranked_root_children(self) -> list[Node]:
        """Root children by §9: proven wins (shorter first), others by N, Q, P; proven losses."""
        return sorted(self._root_children(), key=self._rank_key, reverse=True)

    def _rank_key(self, c: Node) -> tuple[float, ...]:
        parent = c.parent
        prior = parent.p[c.index] if parent is not None else 0.0
        if c.terminal == TERMINAL and c.n > 0:
            if c.wl > 0:
                return (2.0, -c.m, 0.0, 0.0)
            if c.wl < 0:
                return (0.0, c.m, 0.0, 0.0)
        q = c.wl + (self._draw_score_at(c.parent) * c.d if self.params.draw_score and c.parent else 0.0)
        return (1.0, float(c.n), q if c.n else -2.0, prior)

    def best_child(self, node: Node) -> Node | None:
        """Best child of a non-root node (PV and ponder move), same ranking as the root."""
        if node.moves is None or not node.moves:
            return None
        kids = [c for c in node.children[: node.touched] if c is not None]
        if not kids:
            return None
        return max(kids, key=self._rank_key)

    def _pv(self, first: Node) -> list[chess.Move]:
        pv = [first.move]
        node = first
        while node.n > 0 and not node.terminal and node.moves:
            nxt = self.best_child(node)
            if nxt is None:
                # unvisited reply: the highest-prior move (§9, PV)
                pv.append(to_move(node.moves[0]))
                break
            pv.append(nxt.move)
            if nxt.n == 0:
                break
            node = nxt
        return [m for m in pv if m is not None]

    def best_move(self) -> tuple[chess.Move | None, chess.Move | None]:
        """``bestmove`` and ``ponder`` (§9): the ponder move may be an unvisited reply."""
        ranked = self.ranked_root_children()
        if not ranked:
            root = self.root
            if root.moves:
                allowed = self._allowed_root_edges()
                return to_move(root.moves[allowed[0]] if allowed else root.moves[0]), None
            moves = list(self.history.board.generate_legal_moves())
            if self._root_filter:
                moves = [m for m in moves if pack(m) in self._root_filter] or moves
            return (moves[0] if moves else None), None
        best = ranked[0]
        ponder = None
        if best.n > 0 and best.moves:
            nxt = self.best_child(best)
            ponder = nxt.move if nxt is not None else to_move(best.moves[0])
        return best.move, ponder

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
        ranked = self.ranked_root_children()
        for child in ranked[: max(1, self.params.multipv)]:
            if child.n > 0:
                wl, d, m = child.wl, child.d, child.m
            else:
                wl, d, m = -root.wl, root.d, root.m + 1  # unvisited: the root's values
            mate = None
            if child.terminal == TERMINAL and child.n > 0 and child.wl != 0:
                mate = int(round(child.m)) // 2 + 1
                mate = mate if child.wl > 0 else -mate
            lines.append(PvLine(self._pv(child), wl, d, m, child.n, mate))
        if not lines and root.n > 0:
            lines.append(PvLine([], -root.wl, root.d, root.m, root.n))
        return SearchInfo(
            depth=self._avg_depth(),
            seldepth=self.max_depth,
            time_ms=int((now - self.start_time) * 1000),
            nodes=root.n,
            nps=nps,
            playouts=self.playouts,
            nn_evals=self.nn_evals,
            lines=lines,
            cache_fill_permille=self.cache.fill_permille(),
        )

    def _maybe_send_info(self) -> None:
        if not self.playouts or self._responded:
            return
        ranked = self.ranked_root_children()
        best = ranked[0].move if ranked else None
        state = (best, self._avg_depth(), self.max_depth)
        if state != self._last_info or time.perf_counter() - self._last_info_time > 5.0:
            self._send_info()

    def _send_info(self) -> None:
        info = self.info()
        ranked_best = info.lines[0].moves[0] if info.lines and info.lines[0].moves else None
        self._last_info = (ranked_best, info.depth, info.seldepth)
        self._last_info_time = time.perf_counter()
        self.cb.on_info(info)

    def _finish(self) -> None:
        """Emit the final info, verbose stats and ``bestmove`` exactly once."""
        with self._lock:
            if self._responded:
                return
            self._responded = True
            self._release_tree()
            try:
                self.cb.on_info(self.info())  # at least one score line before bestmove
                if self.params.verbose_move_stats:
                    self.cb.on_verbose(self)
                best, ponder = self.best_move()
            except BaseException as exc:  # never leave the GUI without a bestmove
                self.cb.on_message(f"error in search: {type(exc).__name__}: {exc}")
                moves = list(self.history.board.generate_legal_moves())
                best, ponder = (moves[0] if moves else None), None
        try:
            self.cb.on_bestmove(best, ponder)
        finally:
            self._done.set()
            self.cb = SearchCallbacks(on_message=self.cb.on_message)  # drop closures (cycles)
