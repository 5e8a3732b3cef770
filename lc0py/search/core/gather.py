"""Per-round bookkeeping of ``GatherMinibatch`` and the batch's backup, compiled.

``picks`` rows: (node, depth, multivisit, maxvisit, is_collision) as ``pick.pick_nodes`` writes
them; ``kinds``/``vals`` as ``leaves.extend_picks`` fills them. ``stats``: int64 counters
[playouts, sum of depths, max depth, out-of-order visits, network evaluations, visits of
two-fold draws reverted after tree reuse].
"""

from __future__ import annotations

import numpy as np

from lc0py.search.core.arrays import TreeArrays
from lc0py.search.core.backup import add_in_flight, backup_rows, cancel_collision
from lc0py.search.core.jit import njit
from lc0py.search.core.leaves import KIND_CACHE_HIT, KIND_NN, ExtendWork, Positions, Requests, extend_picks
from lc0py.search.core.nncache import CacheArrays
from lc0py.search.core.noise import apply_root_noise
from lc0py.search.core.pick import P_NOISE_EPS, PickWork, pick_nodes
from lc0py.search.core.rescale import P_TB_PIECES, rescale_leaf
from lc0py.search.core.tasks import Staged, commit_picks
from lc0py.search.core.unmanaged import without_refcounts

KIND_REMOVED = -100  # resolve_out_of_order: a row taken out of the round (kept rows: NN, TB probe)
S_PLAYOUTS, S_DEPTH_SUM, S_MAX_DEPTH, S_OOO, S_NN, S_REVERTED = 0, 1, 2, 3, 4, 5


@njit
def _count_visit(picks: np.ndarray, i: int, stats: np.ndarray) -> None:
    """The playout counters of visit row ``i`` (the caller backs it up with ``backup``; calls
    that pass the tree's tuple of arrays cost ~0.15 µs each in reference counting, so the
    batch loops call ``backup`` directly)."""
    multi = picks[i, 2]
    stats[S_PLAYOUTS] += multi
    stats[S_DEPTH_SUM] += picks[i, 1] * multi
    if picks[i, 1] > stats[S_MAX_DEPTH]:
        stats[S_MAX_DEPTH] = picks[i, 1]


@njit
def resolve_out_of_order(
    t: TreeArrays,
    root: int,
    picks: np.ndarray,
    kinds: np.ndarray,
    vals: np.ndarray,
    start: int,
    end: int,
    enabled: bool,
    sticky: bool,
    stats: np.ndarray,
) -> int:
    """Cache hits and terminals of this round are backed up now (out of order); if there were
    any, this round's collisions are cancelled (lc0 cannot tell which ones they blocked).
    Returns the new end of the rows (the resolved ones removed, order kept)."""
    if not enabled:
        return end
    some = False
    for i in range(start, end):
        if picks[i, 4] == 0 and (kinds[i] == KIND_CACHE_HIT or t.term[picks[i, 0]] != 0):
            some = True
            break
    if not some:
        return end
    rows = np.empty(end - start, np.int64)  # (the removed rows are marked KIND_REMOVED in kinds)
    count = 0
    for i in range(end - 1, start - 1, -1):
        node = picks[i, 0]
        if picks[i, 4] != 0:
            cancel_collision(t, node, root, picks[i, 2])
            kinds[i] = KIND_REMOVED
        elif kinds[i] == KIND_CACHE_HIT or t.term[node] != 0:
            # backed up below, in this order (a terminal's own value replaces vals[i]; the
            # collisions cancelled meanwhile touch only visits in flight, which backups
            # never read)
            rows[count] = i
            count += 1
            _count_visit(picks, i, stats)
            stats[S_OOO] += 1
            kinds[i] = KIND_REMOVED
    backup_rows(t, root, picks, vals, rows, count, sticky)
    k = start
    for i in range(start, end):
        if kinds[i] != KIND_REMOVED:
            if k != i:
                for c in range(5):
                    picks[k, c] = picks[i, c]
                kinds[k] = kinds[i]
                vals[k, 0] = vals[i, 0]
                vals[k, 1] = vals[i, 1]
                vals[k, 2] = vals[i, 2]
            k += 1
    return k


@njit
def settle_collisions(t: TreeArrays, root: int, picks: np.ndarray, start: int, end: int, left: int) -> int:
    """Enlarge a collision that took a whole walk to the remaining collision budget (it ends
    the gather sooner) and spend the budget; returns what is left (<= 0: the gather ends)."""
    for i in range(start, end):
        if picks[i, 4] == 0:
            continue
        multi = picks[i, 2]
        maxv = picks[i, 3]
        if maxv > 0 and left > multi:
            extra = (maxv if maxv < left else left) - multi
            picks[i, 2] = multi + extra
            add_in_flight(t, picks[i, 0], root, extra)
        left -= picks[i, 2]
        if left <= 0:
            return left
    return left


@njit
def backup_batch(
    t: TreeArrays,
    root: int,
    picks: np.ndarray,
    kinds: np.ndarray,
    vals: np.ndarray,
    count: int,
    q: np.ndarray,
    d: np.ndarray,
    m: np.ndarray,
    sticky: bool,
    stats: np.ndarray,
    prm: np.ndarray,
) -> bool:
    """``DoBackupUpdate`` of the batch's visits in order (the k-th network leaf is row k of the
    results, rescaled by ``core/rescale.py``); returns whether any visit was backed up."""
    work = False
    b = 0
    rows = np.empty(count, np.int64)
    n_rows = 0
    for i in range(count):
        if picks[i, 4] != 0:
            continue
        work = True
        if kinds[i] == KIND_NN:
            v, dd = rescale_leaf(prm, picks[i, 1], -np.float32(q[b]), d[b])
            vals[i, 0] = -v
            vals[i, 1] = dd
            vals[i, 2] = m[b]
            b += 1
            stats[S_NN] += 1
        # else: a cache hit's value is in vals[i]; a terminal's own value replaces it
        _count_visit(picks, i, stats)
        rows[n_rows] = i
        n_rows += 1
    backup_rows(t, root, picks, vals, rows, n_rows, sticky)
    return work


@njit
def cancel_visits(t: TreeArrays, root: int, picks: np.ndarray, count: int) -> None:
    """Undo the visits in flight of an abandoned batch (collisions are shared, undone apart)."""
    for i in range(count):
        if picks[i, 4] == 0:
            cancel_collision(t, picks[i, 0], root, 1)
            t.nif[picks[i, 0]] -= 1


@njit
def collision_budget(nodes: float, start: int, end: int, high: int, power: float) -> int:
    """lc0's ``CalculateCollisionsLeft`` (float32 pow and mix, rounded half away from zero):
    ``MaxCollisionVisits`` scaled from 1 at ``start`` nodes to ``high`` at ``end``."""
    if nodes >= end:
        return high
    if nodes <= start:
        return 1
    f = np.float32
    ratio = f(f(f(nodes) - f(start)) / f(end - start)) ** f(power)
    x = f(1) + f(high - 1) * ratio
    return int(np.floor(np.float64(x) + 0.5))


# state slots of ``gather_minibatch`` (kept between calls when the arrays had to grow, or while
# task workers scan a round: G_PENDING 1, the round's picks [G_START, G_END))
G_MB, G_LEFT, G_OOO_START, G_COUNT, G_NEED, G_PENDING, G_START, G_END = 0, 1, 2, 3, 4, 5, 6, 7
GATHER_DONE = 0
GATHER_NEEDS_SPACE = 1
GATHER_SCAN = 2  # a round's picks [G_START, G_END) wait for ``tasks.scan_picks``; call again
EDGES_PER_VISIT = 218  # most legal moves of a chess position


@njit
def gather_minibatch(
    t: TreeArrays,
    root: int,
    prm: np.ndarray,
    allowed: np.ndarray,
    remaining_playouts: float,
    best_root_child: int,
    picks: np.ndarray,
    kinds: np.ndarray,
    vals: np.ndarray,
    req: Requests,
    pos: Positions,
    cache: CacheArrays,
    use_cache: bool,
    two_fold: bool,
    input_format: int,
    fill: int,
    sticky: bool,
    out_of_order: bool,
    target: int,
    max_ooo: int,
    state: np.ndarray,
    stats: np.ndarray,
    vtp: np.ndarray,
    pw: PickWork,
    xw: ExtendWork,
    stop: np.ndarray,
    root_noise: np.ndarray,
    staged: Staged,
    min_parallel: int,
) -> int:
    """lc0's ``GatherMinibatch`` loop (one search thread): pick rounds until the batch holds
    ``target`` visits, the collision budget ``state[G_LEFT]`` is spent, too many visits were
    resolved out of order, or a round gave only cache hits / terminals. Returns
    GATHER_NEEDS_SPACE (``state[G_NEED]`` more rows/nodes wanted; call again after growing the
    arrays) or GATHER_DONE (``state[G_COUNT]`` rows in ``picks``). ``root_noise``: Gamma samples
    for the root's Dirichlet noise (empty: none), applied when the root is a cache hit here (the
    worker applies them to a root the network evaluates).

    Task workers (``min_parallel`` > 0: lc0's ``MinimumProcessingWork``): a round with at least
    that many non-collision picks returns GATHER_SCAN; the caller stages them with
    ``tasks.scan_picks`` (in parallel) into ``staged`` and calls again, and the round goes on
    from ``tasks.commit_picks``, as it would from ``extend_picks``.

    ``pw`` and ``xw``: the scratch of ``pick_nodes`` and ``extend_picks``
    (``pick.pick_workspace``, ``leaves.extend_workspace``), allocated once by the worker, not
    once a round. The tuples of arrays are used without numba's reference counts
    (``core/unmanaged.py``): the loop's calls pass them whole."""
    t = without_refcounts(t)
    req = without_refcounts(req)
    pos = without_refcounts(pos)
    cache = without_refcounts(cache)
    staged = without_refcounts(staged)
    pw = without_refcounts(pw)
    xw = without_refcounts(xw)
    counter = np.zeros(1, np.int64)
    reverted = np.zeros(1, np.int64)
    while True:
        if state[G_PENDING] != 0:
            state[G_PENDING] = 0
            start = state[G_START]
            end = state[G_END]
            commit_picks(t, picks, start, end, staged, cache, use_cache, kinds, vals, req, prm)
            _finish_round(t, root, picks, kinds, vals, pos, start, end, sticky, out_of_order, state, stats,
                          root_noise, prm)
            if state[G_LEFT] <= 0 or stop[0] != 0:
                return GATHER_DONE
            continue
        if not (state[G_MB] < target and stats[S_OOO] - state[G_OOO_START] < max_ooo):
            return GATHER_DONE
        if state[G_MB] > 0 and req.count[0] == 0:
            return GATHER_DONE
        ooo = stats[S_OOO] - state[G_OOO_START]
        limit = min(state[G_LEFT], target - state[G_MB], max_ooo - ooo)
        rows = limit + 2
        start = state[G_COUNT]
        if (
            len(t.n) - t.meta[0] < rows
            or len(t.emove) - t.meta[1] < rows * EDGES_PER_VISIT
            or start + rows > len(picks)
            or req.count[0] + rows > len(req.nodes)
        ):
            state[G_NEED] = rows
            return GATHER_NEEDS_SPACE
        counter[0] = start
        reverted[0] = 0
        pick_nodes(
            t, root, limit, prm, allowed, remaining_playouts, best_root_child, picks, counter, reverted, vtp,
            pw,
        )
        stats[S_REVERTED] += reverted[0]
        end = counter[0]
        if min_parallel > 0:
            work = 0
            for i in range(start, end):
                if picks[i, 4] == 0:
                    work += 1
            if work >= min_parallel:
                state[G_PENDING] = 1
                state[G_START] = start
                state[G_END] = end
                return GATHER_SCAN
        extend_picks(  # probe_tb a run-time bool, not the constant True: the tablebase path's call
            # from Python (probe_tb False) then runs this same compiled signature, never a second
            # compile of extend_picks inside a timed go (prm[P_TB_PIECES] is 0 without tables)
            t, root, picks, start, end, pos, cache, use_cache, two_fold, input_format, fill, kinds, vals, req,
            prm, prm[P_TB_PIECES] > 0, xw,
        )
        _finish_round(
            t, root, picks, kinds, vals, pos, start, end, sticky, out_of_order, state, stats, root_noise, prm
        )
        if state[G_LEFT] <= 0 or stop[0] != 0:
            return GATHER_DONE


@njit
def _finish_round(
    t: TreeArrays,
    root: int,
    picks: np.ndarray,
    kinds: np.ndarray,
    vals: np.ndarray,
    pos: Positions,
    start: int,
    end: int,
    sticky: bool,
    out_of_order: bool,
    state: np.ndarray,
    stats: np.ndarray,
    root_noise: np.ndarray,
    prm: np.ndarray,
) -> None:
    """A pick round after its leaves were extended: the root's noise on a cache hit, the count
    of visits, the out-of-order backups, the collision budget."""
    if len(root_noise) and end > start and picks[start, 0] == root and kinds[start] == KIND_CACHE_HIT:
        apply_root_noise(t, root, pos, root_noise, prm[P_NOISE_EPS])
    for i in range(start, end):
        if picks[i, 4] == 0:
            state[G_MB] += 1
    before = stats[S_OOO]
    end = resolve_out_of_order(t, root, picks, kinds, vals, start, end, out_of_order, sticky, stats)
    state[G_MB] -= stats[S_OOO] - before
    state[G_COUNT] = end
    state[G_LEFT] = settle_collisions(t, root, picks, start, end, state[G_LEFT])


@njit
def cancel_collisions(t: TreeArrays, root: int, rows: np.ndarray, count: int) -> None:
    """``CancelSharedCollisions``: rows (node, multivisit)."""
    for i in range(count):
        cancel_collision(t, rows[i, 0], root, rows[i, 1])


@njit
def collect_collisions(picks: np.ndarray, count: int, rows: np.ndarray, n: int) -> int:
    """Append the batch's collisions (node, multivisit) to ``rows[n:]``; returns the new n
    (the caller made room for ``count`` more)."""
    for i in range(count):
        if picks[i, 4] != 0:
            rows[n, 0] = picks[i, 0]
            rows[n, 1] = picks[i, 2]
            n += 1
    return n
