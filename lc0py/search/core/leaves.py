"""New leaves, compiled: lc0's ``ExtendNode`` (legal moves, game-over and draw rules) and
``AddInput`` (NN-cache lookup, else the 112 input planes and policy indices into the batch),
then ``FetchSingleNodeResult`` for network results (lc0's softmax, 16-bit priors, sort).

Positions are replayed from the root with ``board.play`` along the path of each leaf; the rows
of the path stay in ``hist`` and consecutive leaves (picked depth-first) share their prefix, so
a leaf costs about one ``play`` on average. Rows ``[0, game_len)`` of ``hist`` are the game up to
the root (for repetitions and the history planes), the root is row ``game_len − 1``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from lc0py.chess.core import board as B
from lc0py.chess.core.bits import popcount
from lc0py.chess.core.encode import encode, policy_indices
from lc0py.search.core import nncache as C
from lc0py.search.core.arrays import END_OF_GAME, TABLEBASE, TWO_FOLD, TreeArrays, child_at, reserve_edges
from lc0py.search.core.backup import make_terminal
from lc0py.search.core.jit import njit
from lc0py.search.core.numeric import cpuct, fpu_value, prior_value, puct_mult, softmax_codes
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
    node_q,
)
from lc0py.search.core.rescale import P_TB_PIECES, rescale_leaf

KIND_NONE = -1  # collision, or a terminal revisited (nothing to extend)
KIND_TERMINAL = 0
KIND_CACHE_HIT = 1
KIND_NN = 2
KIND_TB_PROBE = 3  # a tablebase position: the worker probes it (Python), then finishes it

MAX_PATH = 1100


class Positions(NamedTuple):
    """The game plus the current path, as the compiled code reads them."""

    hist: np.ndarray  # uint64 [game + MAX_PATH, POS_WORDS]
    keys: np.ndarray  # uint64 [rows]
    r50: np.ndarray  # int32 [rows]
    reps: np.ndarray  # int32 [rows]
    cycle: np.ndarray  # int32 [rows]: plies since the previous repetition
    path: np.ndarray  # int32 [MAX_PATH]: node at each depth of the rows after the root
    meta: np.ndarray  # int64 [4]: game_len, path_len


class Requests(NamedTuple):
    """Leaves waiting for the network (row ``b`` of the batch)."""

    nodes: np.ndarray  # int32 [cap]
    keys: np.ndarray  # uint64 [cap]
    nmoves: np.ndarray  # int32 [cap]
    idx: np.ndarray  # int16 [cap, 256]
    masks: np.ndarray  # uint64 [cap, 112]
    values: np.ndarray  # float32 [cap, 112]
    count: np.ndarray  # type: ignore[assignment]  # int64 [1]; shadows tuple.count (name used when compiled)


def make_positions(game: list[np.ndarray]) -> Positions:
    """``game``: core positions from the game's start to the root."""
    g = len(game)
    rows = g + MAX_PATH
    hist = np.zeros((rows, B.POS_WORDS), np.uint64)
    hist[:g] = np.stack(game)
    keys = np.zeros(rows, np.uint64)
    r50 = np.zeros(rows, np.int32)
    reps = np.zeros(rows, np.int32)
    cycle = np.zeros(rows, np.int32)
    fill_game_rows(hist, keys, r50, reps, cycle, g)
    meta = np.zeros(4, np.int64)
    meta[0] = g
    meta[1] = 1
    path = np.full(MAX_PATH, -1, np.int32)
    return Positions(hist, keys, r50, reps, cycle, path, meta)


@njit
def fill_game_rows(hist, keys, r50, reps, cycle, g):  # type: ignore[no-untyped-def]
    for i in range(g):
        keys[i] = B.key(hist[i])
        r50[i] = B.rule50(hist[i])
        reps[i], cycle[i] = B.repetitions(keys, r50, i + 1)


def make_requests(cap: int) -> Requests:
    return Requests(
        np.zeros(cap, np.int32),
        np.zeros(cap, np.uint64),
        np.zeros(cap, np.int32),
        np.zeros((cap, 256), np.int16),
        np.zeros((cap, 112), np.uint64),
        np.ones((cap, 112), np.float32),
        np.zeros(1, np.int64),
    )


SORT_STACK = 64  # introsort's explicit stack: ~2·log2(n) entries, at most 16 for 218 edges


@njit
def lc0_sort_packed(w: np.ndarray, n: int, stack: np.ndarray) -> None:
    """``std::sort`` of libstdc++ (introsort, median-of-three, final insertion sort) of
    ``w[:n]`` by descending ``w >> 16``, so edges with equal priors end in the order lc0's
    ``Node::SortEdges`` leaves them (from lc0's move-generation order). ``w``: an edge's prior
    code in the high 16 bits, its move in the low 16 (one word moves both); ``stack``: int64
    scratch ``[3, SORT_STACK]``. The heap-sort fallback for a too-deep recursion, never reached
    for a few hundred edges, is replaced by the insertion sort.

    Written as one function (libstdc++'s ``__insertion_sort``, ``__unguarded_linear_insert``,
    ``__move_median_to_first``, ``__unguarded_partition`` inline, no call passing arrays) on
    one packed word per edge: 35 edges sort in ~0.85 µs instead of ~1.25 µs with the former
    two-array helpers; a search sorts once per new leaf."""
    h16 = np.uint32(16)
    depth = 0
    k = n
    while k > 1:
        depth += 1
        k >>= 1
    stack[0, 0], stack[1, 0], stack[2, 0] = 0, n, 2 * depth
    top = 1
    while top > 0:
        top -= 1
        lo, hi, d = stack[0, top], stack[1, top], stack[2, top]
        while hi - lo > 16:
            if d == 0:
                # __insertion_sort on [lo, hi) (instead of the heap sort)
                for i in range(lo + 1, hi):
                    v = w[i]
                    key = v >> h16
                    if key > (w[lo] >> h16):
                        for j in range(i, lo, -1):
                            w[j] = w[j - 1]
                        w[lo] = v
                    else:
                        j = i - 1
                        while key > (w[j] >> h16):
                            w[j + 1] = w[j]
                            j -= 1
                        w[j + 1] = v
                hi = lo
                break
            d -= 1
            # __move_median_to_first(lo, lo + 1, mid, hi - 1)
            a, b, c = lo + 1, lo + (hi - lo) // 2, hi - 1
            ka, kb, kc = w[a] >> h16, w[b] >> h16, w[c] >> h16
            if ka > kb:
                m = b if kb > kc else (c if ka > kc else a)
            else:
                m = a if ka > kc else (c if kb > kc else b)
            w[lo], w[m] = w[m], w[lo]
            # __unguarded_partition around w[lo]
            first, last = lo + 1, hi
            pivot = w[lo] >> h16
            while True:
                while (w[first] >> h16) > pivot:
                    first += 1
                last -= 1
                while pivot > (w[last] >> h16):
                    last -= 1
                if not first < last:
                    break
                w[first], w[last] = w[last], w[first]
                first += 1
            # recurse on the right part, loop on the left (as libstdc++)
            stack[0, top], stack[1, top], stack[2, top] = first, hi, d
            top += 1
            hi = first
    # __final_insertion_sort: guarded on the first 16, unguarded after (positions unsigned:
    # no negative-index wrap-around code; the sentinel keeps them >= 1)
    one = np.uint64(1)
    for i in range(1, n):
        ui = np.uint64(i)
        v = w[ui]
        key = v >> h16
        if i < 16 and key > (w[0] >> h16):
            for j in range(i, 0, -1):
                w[j] = w[j - 1]
            w[0] = v
        else:
            uj = ui
            while key > (w[uj - one] >> h16):
                w[uj] = w[uj - one]
                uj -= one
            w[uj] = v


RANK_SORT_MAX = 64  # edge lists up to this long try the counting sort first (quadratic)


@njit(inline="always")
def _sort_pool(mv: np.ndarray, cd: np.ndarray, e0: int, n: int, w: np.ndarray, stack: np.ndarray) -> None:
    """``mv[e0:e0+n]``/``cd[e0:e0+n]`` sorted as ``lc0_sort_packed`` sorts them, through ``w``
    (at least ``max(n, 2 * RANK_SORT_MAX)`` words). When the codes are all distinct the
    descending order is unique, so any sort gives ``std::sort``'s: each edge's place is the
    number of edges above it (a branch-free count, ~4x faster than the introsort on 35 edges);
    only equal codes, where ``std::sort``'s choices decide the order, take ``lc0_sort_packed``."""
    h = np.uint32(16)
    for i in range(n):
        w[i] = (np.uint32(cd[e0 + i]) << h) | np.uint32(mv[e0 + i])
    src = 0
    if n <= RANK_SORT_MAX:
        for i in range(n):
            x = w[i]
            above = 0
            for j in range(n):
                above += np.int32(w[j] > x)  # (code, move) words differ: the moves do
            w[RANK_SORT_MAX + above] = x
        src = RANK_SORT_MAX
        for i in range(RANK_SORT_MAX + 1, RANK_SORT_MAX + n):
            if (w[i - 1] >> h) == (w[i] >> h):
                src = 0  # equal codes
                break
    if src == 0:
        lc0_sort_packed(w, n, stack)
    for i in range(n):
        mv[e0 + i] = np.uint16(w[src + i] & np.uint32(0xFFFF))
        cd[e0 + i] = np.uint16(w[src + i] >> h)


@njit
def lc0_sort(mv: np.ndarray, cd: np.ndarray, n: int) -> None:
    """Moves ``mv[:n]`` and their prior codes ``cd[:n]`` sorted as lc0's ``Node::SortEdges``
    (``lc0_sort_packed``)."""
    w = np.empty(max(n, 2 * RANK_SORT_MAX), np.uint32)
    _sort_pool(mv, cd, 0, n, w, np.empty((3, SORT_STACK), np.int64))


@njit(inline="always")
def sort_edges(t: TreeArrays, node: int, w: np.ndarray, stack: np.ndarray) -> None:
    """``Node::SortEdges``: by prior code, descending, as lc0's ``std::sort`` orders them.
    ``w``: uint32 scratch of ``B.MAX_MOVES``, ``stack``: int64 ``[3, SORT_STACK]``."""
    _sort_pool(t.emove, t.ep, t.edge0[node], np.int32(t.nedges[node]), w, stack)


@njit(inline="always")
def position_row(
    parent: np.ndarray,
    emove: np.ndarray,
    edge0: np.ndarray,
    index: np.ndarray,
    root: int,
    node: int,
    pos: Positions,
    chain: np.ndarray,
) -> int:
    """Bring the rows of ``node``'s path into ``pos`` (replaying only what differs from the
    previous path); returns the row of ``node``. (The tree's arrays are passed one by one: a
    call that passes the whole ``TreeArrays`` tuple costs ~0.15 µs in reference counting.)"""
    g = pos.meta[0]
    depth = 0
    x = node
    while x != root:
        chain[depth] = x
        depth += 1
        x = parent[x]
    # chain[depth-1] is at depth 1, chain[0] at depth `depth`
    same = 1
    plen = pos.meta[1]
    while same <= depth and same < plen and pos.path[same] == chain[depth - same]:
        same += 1
    for d in range(same, depth + 1):
        y = chain[depth - d]
        p = parent[y]
        move = emove[edge0[p] + index[y]]
        row = g - 1 + d
        B.play(pos.hist[row - 1], move, pos.hist[row])
        pos.keys[row] = B.key(pos.hist[row])
        pos.r50[row] = B.rule50(pos.hist[row])
        r, cyc = B.repetitions(pos.keys, pos.r50, row + 1)
        pos.reps[row] = r
        pos.cycle[row] = cyc
        pos.path[d] = y
    pos.meta[1] = depth + 1
    return g - 1 + depth


@njit(inline="always")
def leaf_rule(
    p: np.ndarray, n: int, node: int, root: int, depth: int, pos: Positions, row: int, two_fold: bool,
    tb_pieces: int,
) -> tuple[int, int, float, int]:
    """``ExtendNode``'s rules for a leaf with ``n`` legal moves, in lc0's order: no move (mate or
    stalemate); then, below the root, insufficient material, the 50-move rule, a threefold; a
    two-fold in the tree (``two_fold``); a tablebase position to probe (``tb_pieces`` > 0).
    Returns (kind, result, plies, terminal kind): KIND_NONE when the leaf is to be extended,
    KIND_TERMINAL with the terminal's facts, or KIND_TB_PROBE. (``extend_picks`` and the task
    workers' ``tasks.scan_picks`` share it.)"""
    if n == 0:
        return KIND_TERMINAL, 1 if B.in_check(p) else 0, 0.0, END_OF_GAME
    if node != root:
        reps = pos.reps[row]
        if B.insufficient_material(p) or pos.r50[row] >= 100 or reps >= 2:
            return KIND_TERMINAL, 0, 0.0, END_OF_GAME
        if reps == 1 and depth - 1 >= 4 and two_fold and depth - 1 >= pos.cycle[row]:
            return KIND_TERMINAL, 0, float(np.float32(pos.cycle[row])), TWO_FOLD
        if (
            tb_pieces > 0
            and pos.r50[row] == 0
            and p[B.W_CASTLING] == 0
            and popcount(p[B.W_COLOUR] | p[B.W_COLOUR + 1]) <= tb_pieces
        ):
            return KIND_TB_PROBE, 0, 0.0, END_OF_GAME
    return KIND_NONE, 0, 0.0, END_OF_GAME


class ExtendWork(NamedTuple):
    """``extend_picks``' scratch, allocated once by its caller (``extend_workspace``): an
    allocation inside the call is an NRT allocation (~70 ns on the development machine), five a
    pick round, and a gather makes several rounds of a few leaves each."""

    moves: np.ndarray  # uint16 [MAX_MOVES]: a leaf's legal moves
    codes: np.ndarray  # uint16 [MAX_MOVES]: their policy indices
    chain: np.ndarray  # int32 [MAX_PATH]: the leaf's path
    work: np.ndarray  # uint32 [MAX_MOVES]: the edge sort's keys
    stack: np.ndarray  # int64 [3, SORT_STACK]: the edge sort's stack


def extend_workspace() -> ExtendWork:
    """A fresh ``ExtendWork`` (every slot is written before ``extend_picks`` reads it)."""
    return ExtendWork(
        np.empty(B.MAX_MOVES, np.uint16), np.empty(B.MAX_MOVES, np.uint16), np.empty(MAX_PATH, np.int32),
        np.empty(B.MAX_MOVES, np.uint32), np.empty((3, SORT_STACK), np.int64),
    )


@njit
def extend_picks(
    t: TreeArrays,
    root: int,
    picks: np.ndarray,
    start: int,
    end: int,
    pos: Positions,
    cache: C.CacheArrays,
    use_cache: bool,
    two_fold: bool,
    input_format: int,
    fill: int,
    kinds: np.ndarray,
    vals: np.ndarray,
    req: Requests,
    prm: np.ndarray,
    probe_tb: bool,
    xw: ExtendWork,
) -> None:
    """Extend the new leaves among ``picks[start:end]`` (visits to non-terminal nodes):
    ``kinds[i]`` gets KIND_*, ``vals[i]`` the (q, d, m) of a cache hit (side to move, q and d
    rescaled as ``core/rescale.py`` says). The caller reserved 218 edges per row and room for
    every row in ``req``.

    With ``probe_tb`` and tables of ``prm[P_TB_PIECES]`` pieces, a non-root leaf that lc0's
    ``ExtendNode`` would probe (right after a zeroing move, no castling rights, within the
    tables' pieces) is left unextended as KIND_TB_PROBE: the worker probes it with python-chess
    and makes it a tablebase terminal, or extends it again without ``probe_tb``. ``xw``: the
    scratch of ``extend_workspace()``, allocated once by the caller."""
    tb_pieces = int(prm[P_TB_PIECES]) if probe_tb else 0
    moves, codes, chain, work, stack = xw.moves, xw.codes, xw.chain, xw.work, xw.stack
    for i in range(start, end):
        kinds[i] = KIND_NONE
        if picks[i, 4] != 0:
            continue
        node = picks[i, 0]
        if t.term[node] != 0:
            continue
        depth = picks[i, 1]
        row = position_row(t.parent, t.emove, t.edge0, t.index, root, node, pos, chain)
        p = pos.hist[row]
        n = B.gen_legal(p, moves)
        kind, result, plies, tkind = leaf_rule(p, n, node, root, depth, pos, row, two_fold, tb_pieces)
        if kind == KIND_TERMINAL:
            make_terminal(t, node, result, np.float32(plies), tkind)
        if kind != KIND_NONE:
            kinds[i] = kind
            continue
        e0 = reserve_edges(t, n)
        t.edge0[node] = e0
        t.nedges[node] = n
        for j in range(n):
            t.emove[e0 + j] = moves[j]
            t.ep[e0 + j] = 0
        h = C.position_hash(pos.keys[row], pos.reps[row])
        if use_cache:
            s = C.lookup(cache, h, n)
            if s >= 0:
                C.read_codes(cache, s, codes)
                for j in range(n):
                    t.ep[e0 + j] = codes[j]
                sort_edges(t, node, work, stack)
                v, dd = rescale_leaf(prm, depth, -cache.qdm[s, 0], cache.qdm[s, 1])
                vals[i, 0] = -v
                vals[i, 1] = dd
                vals[i, 2] = cache.qdm[s, 2]
                t.v[node] = -cache.qdm[s, 0]
                kinds[i] = KIND_CACHE_HIT
                continue
        b = req.count[0]
        req.count[0] = b + 1
        transform = encode(pos.hist, pos.reps, row + 1, input_format, fill, req.masks[b], req.values[b])
        policy_indices(p, moves, n, transform, req.idx[b])
        req.nodes[b] = node
        req.keys[b] = h
        req.nmoves[b] = n
        kinds[i] = KIND_NN


@njit
def apply_results(
    t: TreeArrays,
    req: Requests,
    policy: np.ndarray,
    wdl: np.ndarray,
    moves_left: np.ndarray,
    row0: int,
    inv_temperature: float,
    cache: C.CacheArrays,
    use_cache: bool,
    to_tree: bool,
    q: np.ndarray,
    d: np.ndarray,
    m: np.ndarray,
) -> None:
    """Network results of ``req`` (rows ``row0 …`` of the backend's output arrays, read where
    they are: no copy, no per-batch allocation) into the cache and (``to_tree``) the leaves'
    edges: lc0's ``FetchSingleNodeResult``. ``q = W − L``, ``d = D``, ``m`` (float32, as the
    numpy expressions gave them) are written into ``q``, ``d``, ``m`` for the backup."""
    logits = np.empty(B.MAX_MOVES, np.float32)
    codes = np.empty(B.MAX_MOVES, np.uint16)
    work = np.empty(B.MAX_MOVES, np.uint32)
    stack = np.empty((3, SORT_STACK), np.int64)
    for b in range(req.count[0]):
        r = row0 + b
        q[b] = np.float32(wdl[r, 0]) - np.float32(wdl[r, 2])
        d[b] = wdl[r, 1]
        m[b] = moves_left[r]
        n = req.nmoves[b]
        for j in range(n):
            logits[j] = policy[r, req.idx[b, j]]
        softmax_codes(logits, n, inv_temperature, codes)
        if use_cache:
            C.insert(cache, req.keys[b], q[b], d[b], m[b], codes, n)
        if to_tree and req.nodes[b] >= 0:  # -1: prefetched into the cache only
            node = req.nodes[b]
            e0 = t.edge0[node]
            for j in range(n):
                t.ep[e0 + j] = codes[j]
            sort_edges(t, node, work, stack)
            t.v[node] = -q[b]


@njit
def _play_row(pos: Positions, row: int, move: int) -> int:
    """The position after ``move`` from ``row`` into ``row + 1`` (outside the path cache: the
    cached path is cut there)."""
    nxt = row + 1
    B.play(pos.hist[row], move, pos.hist[nxt])
    pos.keys[nxt] = B.key(pos.hist[nxt])
    pos.r50[nxt] = B.rule50(pos.hist[nxt])
    r, cyc = B.repetitions(pos.keys, pos.r50, nxt + 1)
    pos.reps[nxt] = r
    pos.cycle[nxt] = cyc
    depth = nxt - (pos.meta[0] - 1)
    if pos.meta[1] > depth:
        pos.meta[1] = depth
    return nxt


@njit
def _prefetch_leaf(
    pos: Positions, row: int, cache: C.CacheArrays, req: Requests, input_format: int, fill: int
) -> None:
    """A position without visits: queue it for the network unless cached (or the batch is full)."""
    p = pos.hist[row]
    moves = np.empty(B.MAX_MOVES, np.uint16)
    n = B.gen_legal(p, moves)
    h = C.position_hash(pos.keys[row], pos.reps[row])
    if C.probe_only(cache, h, n) or req.count[0] >= len(req.nodes):
        return
    b = req.count[0]
    req.count[0] = b + 1
    transform = encode(pos.hist, pos.reps, row + 1, input_format, fill, req.masks[b], req.values[b])
    policy_indices(p, moves, n, transform, req.idx[b])
    req.nodes[b] = -1
    req.keys[b] = h
    req.nmoves[b] = n


@njit
def _prefetch_scores(
    t: TreeArrays, root: int, node: int, odd: bool, prm: np.ndarray, edges: np.ndarray, scores: np.ndarray
) -> tuple[int, float, float]:
    """Edges of ``node`` with a prior, by descending U + Q (``edges``/``scores`` filled, sorted);
    returns (count, puct_mult, fpu)."""
    is_root = node == root
    ds = np.float32(prm[P_DRAW_ODD] if odd else prm[P_DRAW_EVEN])
    if is_root:
        cp = cpuct(prm[P_CPUCT_ROOT], prm[P_FACTOR_ROOT], prm[P_BASE_ROOT], t.n[node])
        absolute, value = prm[P_FPU_ABS_ROOT] != 0.0, prm[P_FPU_ROOT]
    else:
        cp = cpuct(prm[P_CPUCT], prm[P_FACTOR], prm[P_BASE], t.n[node])
        absolute, value = prm[P_FPU_ABS] != 0.0, prm[P_FPU]
    mult = puct_mult(cp, t.n[node])
    e0 = t.edge0[node]
    visited = np.float32(0.0)
    c = t.child[node]
    while c >= 0:
        if t.n[c] > 0:
            visited += prior_value(t.ep[e0 + t.index[c]])
        c = t.sibling[c]
    fpu = fpu_value(absolute, value, node_q(t, node, -ds), visited)
    ne = np.int32(t.nedges[node])
    k = 0
    for e in range(ne):
        pr = prior_value(t.ep[e0 + e])
        if pr == np.float32(0.0):
            continue
        x = child_at(t, node, e)
        started = (t.n[x] + t.nif[x]) if x >= 0 else 0
        q = node_q(t, x, ds) if x >= 0 and t.n[x] > 0 else fpu
        sc = np.float32(mult * pr / np.float32(1 + started) + q)  # as the float32 array held it
        # insertion by descending score, after equal ones: the order of a stable sort (the
        # mergesort argsort of the negated scores this replaced), without allocating
        j = k
        while j > 0 and scores[j - 1] < sc:
            edges[j] = edges[j - 1]
            scores[j] = scores[j - 1]
            j -= 1
        edges[j] = e
        scores[j] = sc
        k += 1
    return k, mult, fpu


PREFETCH_DEPTH = MAX_PATH - 80  # plies ``prefetch`` descends at most


def prefetch_workspace() -> tuple[np.ndarray, np.ndarray]:
    """``prefetch``'s per-ply edge orders and scores."""
    return np.zeros((PREFETCH_DEPTH, 256), np.int32), np.zeros((PREFETCH_DEPTH, 256), np.float32)


@njit
def prefetch(
    t: TreeArrays,
    root: int,
    row0: int,
    budget0: int,
    prm: np.ndarray,
    pos: Positions,
    cache: C.CacheArrays,
    req: Requests,
    input_format: int,
    fill: int,
    f_edges: np.ndarray,
    f_scores: np.ndarray,
) -> int:
    """lc0's ``PrefetchIntoCache`` from the root (whose row is ``row0``), iteratively: spend
    ``budget0`` spare batch slots on the positions the search is likely to visit next (by PUCT
    order, each child getting the visits it would take before the next one overtakes it); they
    are evaluated into the NN cache only. Returns the slots used. ``f_edges``/``f_scores``: the
    caller's workspace (``prefetch_workspace``; 2 MB, allocated once rather than every batch)."""
    if budget0 <= 0 or t.n[root] == 0 or t.term[root] != 0:
        return 0
    cap = len(f_edges)
    f_node = np.empty(cap, np.int32)
    f_row = np.empty(cap, np.int32)
    f_budget = np.empty(cap, np.int64)
    f_spend = np.empty(cap, np.int64)  # budget for the child being visited (carried to the last)
    f_total = np.empty(cap, np.int64)
    f_i = np.empty(cap, np.int32)
    f_k = np.empty(cap, np.int32)
    f_mult = np.empty(cap, np.float32)
    f_fpu = np.empty(cap, np.float32)
    top = 0
    f_node[0] = root
    f_row[0] = row0
    f_budget[0] = budget0
    f_spend[0] = budget0
    f_total[0] = 0
    f_i[0] = 0
    k, mult, fpu = _prefetch_scores(t, root, root, False, prm, f_edges[0], f_scores[0])
    f_k[0], f_mult[0], f_fpu[0] = k, mult, fpu
    while top >= 0:
        node = f_node[top]
        odd = top % 2 == 1
        i = f_i[top]
        k = f_k[top]
        if i >= k or f_budget[top] <= 0 or top + 1 >= cap:
            spent = f_total[top]
            top -= 1
            if top >= 0:
                f_budget[top] -= spent
                f_total[top] += spent
                f_i[top] += 1
            continue
        ds_here = np.float32(prm[P_DRAW_ODD] if odd else prm[P_DRAW_EVEN])
        e = f_edges[top, i]
        x = child_at(t, node, e)
        e0 = t.edge0[node]
        if i != k - 1:
            next_score = f_scores[top, i + 1]
            q = node_q(t, x, ds_here) if x >= 0 and t.n[x] > 0 else -f_fpu[top]
            if next_score > q:
                started = (t.n[x] + t.nif[x]) if x >= 0 else 0
                pr = prior_value(t.ep[e0 + e])
                v = np.int64(pr * f_mult[top] / (next_score - q) - np.float32(started)) + 1
                f_spend[top] = f_budget[top] if f_budget[top] < v else v
            else:
                f_spend[top] = f_budget[top]
        child_row = _play_row(pos, f_row[top], t.emove[e0 + e])
        to_spend = f_spend[top]
        if to_spend <= 0:
            f_i[top] += 1
            continue
        if x < 0 or t.n[x] + t.nif[x] == 0:
            _prefetch_leaf(pos, child_row, cache, req, input_format, fill)
            f_budget[top] -= 1
            f_total[top] += 1
            f_i[top] += 1
            continue
        if t.n[x] == 0 or t.term[x] != 0:
            f_i[top] += 1
            continue
        top += 1
        f_node[top] = x
        f_row[top] = child_row
        f_budget[top] = to_spend
        f_spend[top] = to_spend
        f_total[top] = 0
        f_i[top] = 0
        k2, mult2, fpu2 = _prefetch_scores(t, root, x, top % 2 == 1, prm, f_edges[top], f_scores[top])
        f_k[top], f_mult[top], f_fpu[top] = k2, mult2, fpu2
    return 0


@njit
def tb_probe_position(t: TreeArrays, root: int, node: int, pos: Positions, out: np.ndarray) -> None:
    """The core position of ``node`` (replayed from the root) into ``out`` for a probe."""
    chain = np.empty(MAX_PATH, np.int32)
    row = position_row(t.parent, t.emove, t.edge0, t.index, root, node, pos, chain)
    out[:] = pos.hist[row]


@njit
def make_tablebase_terminal(t: TreeArrays, node: int, wdl: int) -> None:
    """lc0's ``ExtendNode`` after a successful WDL probe (``wdl`` for the side to move at
    ``node``, -2..2): a win or loss, cursed wins and blessed losses as draws; no network value,
    so M is the parent's minus one (at least 0)."""
    parent = t.parent[node]
    m = max(np.float32(0.0), t.m[parent] - np.float32(1.0)) if parent >= 0 else np.float32(0.0)
    result = -1 if wdl == 2 else (1 if wdl == -2 else 0)  # from the side that moved into node
    make_terminal(t, node, result, m, TABLEBASE)
