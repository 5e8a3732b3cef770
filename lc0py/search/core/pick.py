"""lc0's node picking, compiled (``SearchWorker::PickNodesToExtendTask``, one task).

One call walks the tree once from the root and distributes ``collision_limit`` visits: at each
node the PUCT winner gets as many visits as it takes for the runner-up to overtake it
(lc0's multi-visit descent), the rest goes to the next winner, and so on; then the walk goes
down into every child that got visits. A child that is new (N = 0) becomes a *visit* (a leaf to
extend) the first time and a *collision* for every further visit; a terminal child likewise.

Output rows (``picks``: node, depth, multivisit, maxvisit, is_collision) in lc0's order.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from lc0py.search.core.arrays import TWO_FOLD, TreeArrays, make_not_terminal, new_node
from lc0py.search.core.jit import njit
from lc0py.search.core.numeric import cpuct, fpu_value, m_utility, prior_value, puct_mult

F32 = np.float32
LOWEST = F32(-3.4028234663852886e38)  # std::numeric_limits<float>::lowest()

# SearchParams packed for compiled code (``params_array``)
P_CPUCT, P_BASE, P_FACTOR, P_CPUCT_ROOT, P_BASE_ROOT, P_FACTOR_ROOT = 0, 1, 2, 3, 4, 5
P_FPU_ABS, P_FPU, P_FPU_ABS_ROOT, P_FPU_ROOT = 6, 7, 8, 9
P_DRAW_EVEN, P_DRAW_ODD = 10, 11
P_MLH, P_ML_SLOPE, P_ML_CAP, P_ML_A0, P_ML_A1, P_ML_A2, P_ML_THR = 12, 13, 14, 15, 16, 17, 18
P_NOISE_EPS = 19  # DirichletNoiseEpsilon (read by the gather's root-noise hook, core/noise.py)
# 20..23: WDL rescaling (ratio, diff, WDLMaxS, contempt favours the root's side), core/rescale.py;
# 24: the tablebases' most pieces for in-tree probes (0: none), core/leaves.py
P_SIZE = 25

# picks columns
K_NODE, K_DEPTH, K_MULTI, K_MAX, K_COLL = 0, 1, 2, 3, 4

MAX_DEPTH = 1024


@njit
def add_pick(
    picks: np.ndarray, count: np.ndarray, node: int, depth: int, multi: int, maxv: int, coll: int
) -> None:
    k = count[0]
    picks[k, K_NODE] = node
    picks[k, K_DEPTH] = depth
    picks[k, K_MULTI] = multi
    picks[k, K_MAX] = maxv
    picks[k, K_COLL] = coll
    count[0] = k + 1


@njit
def node_q(t: TreeArrays, x: int, draw_score: float) -> float:
    """``Node::GetQ``: ``wl + draw_score·d`` as float."""
    return F32(t.wl[x] + np.float64(F32(draw_score) * t.d[x]))


@njit
def revert_two_fold(t: TreeArrays, child: int, depth: int) -> int:
    """``EnsureNodeTwoFoldCorrectForDepth``: a reused two-fold draw whose cycle now reaches above
    the root is not a draw any more: undo its visits up to the root and make it extendable again.
    Returns the visits removed (lc0 lowers ``initial_visits_`` by them)."""
    if t.term[child] != TWO_FOLD or not (depth < t.m[child]):
        return 0
    wl = t.wl[child]
    d = t.d[child]
    m = t.m[child]
    visits = t.n[child]
    counter = 0
    x = child
    while x >= 0:
        # RevertTerminalVisits(wl, d, m + counter, visits)
        mm = m + F32(counter)
        n_new = t.n[x] - visits
        if n_new <= 0:
            t.wl[x] = 0.0
            t.d[x] = F32(1.0)
            t.m[x] = F32(0.0)
            t.n[x] = 0
        else:
            t.wl[x] -= visits * (np.float64(F32(wl)) - t.wl[x]) / n_new
            t.d[x] -= F32(visits) * (F32(d) - t.d[x]) / F32(n_new)
            t.m[x] -= F32(visits) * (mm - t.m[x]) / F32(n_new)
            t.n[x] = n_new
        counter += 1
        if counter > depth:
            break
        x = t.parent[x]
    make_not_terminal(t, child)
    return visits


@njit(inline="always")
def _root_skip(
    n: np.ndarray,
    x: int,
    idx: int,
    best_root_child: int,
    best_node_n: int,
    remaining_playouts: float,
    has_filter: bool,
    root_allowed: np.ndarray,
) -> int:
    """1 if the scans pass over root edge ``idx`` (child ``x``, -1: none): it cannot catch up
    with the best child in the remaining playouts, or searchmoves exclude it."""
    xn = n[x] if x >= 0 else 0
    is_best = best_root_child >= 0 and x == best_root_child
    if not is_best and remaining_playouts < best_node_n - xn:
        return 1
    if has_filter and root_allowed[idx] == 0:
        return 1
    return 0


class PickWork(NamedTuple):
    """``pick_nodes``' scratch (``pick_workspace``)."""

    f: np.ndarray  # float32 [3 * 256]: policy, utility and score per child of the node being split
    i: np.ndarray  # int32 [3 * 256 + 3 * max depth + 1]: visits started and child per child; last
    # visited index, path and path child per level; skipped root edges


def pick_workspace(max_depth: int) -> PickWork:
    """A fresh ``PickWork`` for a ``vtp`` of ``max_depth`` levels."""
    return PickWork(np.empty(3 * 256, np.float32), np.empty(3 * 256 + 3 * max_depth + 1, np.int32))


@njit
def pick_nodes(
    t: TreeArrays,
    root: int,
    collision_limit: int,
    prm: np.ndarray,
    root_allowed: np.ndarray,
    remaining_playouts: float,
    best_root_child: int,
    picks: np.ndarray,
    count: np.ndarray,
    reverted: np.ndarray,
    vtp: np.ndarray,
    pw: PickWork,
) -> None:
    """Distribute ``collision_limit`` visits from ``root`` (``PickNodesToExtendTask``).

    ``root_allowed``: per root edge, 1 if searchmoves allow it (empty: all); ``remaining_playouts``
    (smart pruning's estimate) and ``best_root_child`` (lc0's ``current_best_edge_``, −1: none)
    skip root moves that cannot catch up. The caller reserved room for ``collision_limit + 1``
    rows in ``picks`` and for ``collision_limit + 1`` new nodes in the tree; ``vtp`` is the
    workspace ``[max depth, 256]`` of visits to perform per level; ``pw`` the scratch of
    ``pick_workspace(max depth)``, allocated once by the caller (an allocation inside the call is
    an NRT allocation, ~70 ns, and a gather makes several pick rounds). Every slot is written
    before it is read (path[plen] and vtp_last[lvl] when a level is entered), so nothing carries
    over between calls.
    """
    max_depth = vtp.shape[0]
    fbuf, ibuf = pw.f, pw.i
    pol = fbuf[0:256]
    util = fbuf[256:512]
    score = fbuf[512:768]
    nstarted = ibuf[0:256]
    kid = ibuf[256:512]
    vtp_last = ibuf[512 : 512 + max_depth]
    path = ibuf[512 + max_depth : 512 + 2 * max_depth + 1]
    path_child = ibuf[512 + 2 * max_depth + 1 : 512 + 3 * max_depth + 1]  # the node at path[lvl]
    skip = ibuf[512 + 3 * max_depth + 1 :]  # root edges the scans pass over (smart pruning, searchmoves)
    has_filter = len(root_allowed) > 0
    best_node_n = t.n[best_root_child] if best_root_child >= 0 else 0
    max_limit = 2147483647
    node = root
    is_root = True
    path[0] = -1
    plen = 1
    mlh = prm[P_MLH] != 0.0
    while plen > 0:
        if path[plen - 1] == -1:
            cur_limit = collision_limit
            if plen > 1:
                cur_limit = vtp[plen - 2, path[plen - 2]]
            if t.n[node] == 0 or t.term[node] != 0:
                if is_root:
                    if not (t.n[node] == 0 and t.nif[node] > 0):
                        t.nif[node] += 1
                        cur_limit -= 1
                        add_pick(picks, count, node, plen, 1, 0, 0)
                if cur_limit > 0:
                    max_count = 0
                    if cur_limit == collision_limit and max_limit > cur_limit:
                        max_count = max_limit
                    add_pick(picks, count, node, plen, cur_limit, max_count, 1)
                node = t.parent[node]
                plen -= 1
                continue
            if is_root:
                t.nif[node] += cur_limit
            lvl = plen - 1
            vtp_last[lvl] = -1
            nedges = np.int32(t.nedges[node])
            max_needed = nedges
            if not is_root or not has_filter:
                lim = t.n[node] + t.nif[node] + cur_limit + 2
                if lim < max_needed:
                    max_needed = lim
            e0 = t.edge0[node]
            for i in range(max_needed):
                pol[i] = prior_value(t.ep[e0 + i])
                util[i] = LOWEST
                kid[i] = -1
            draw_score = F32(prm[P_DRAW_ODD]) if plen % 2 == 0 else F32(prm[P_DRAW_EVEN])
            parent_m = t.m[node]
            within = mlh and abs(node_q(t, node, 0.0)) > F32(prm[P_ML_THR])
            visited_pol = F32(0.0)
            # one walk of the child list (ordered by edge index): the children of the first
            # max_needed edges, the visited ones' utilities and the visited priors' sum
            c = t.child[node]
            while c >= 0:
                k = np.int32(t.index[c])
                if k < max_needed:
                    kid[k] = c
                if t.n[c] > 0:
                    # lc0 sums the visited children's priors over all children (not only max_needed)
                    visited_pol += prior_value(t.ep[e0 + k])
                    if k < max_needed:
                        q = node_q(t, c, draw_score)
                        mu = F32(0.0)
                        if within:
                            mu = m_utility(
                                t.m[c],
                                parent_m,
                                q,
                                prm[P_ML_SLOPE],
                                prm[P_ML_CAP],
                                prm[P_ML_A0],
                                prm[P_ML_A1],
                                prm[P_ML_A2],
                                prm[P_ML_THR],
                            )
                        util[k] = q + mu
                c = t.sibling[c]
            if is_root:
                fpu = fpu_value(
                    prm[P_FPU_ABS_ROOT] != 0.0, prm[P_FPU_ROOT], node_q(t, node, -draw_score), visited_pol
                )
                cp = cpuct(prm[P_CPUCT_ROOT], prm[P_FACTOR_ROOT], prm[P_BASE_ROOT], t.n[node])
            else:
                fpu = fpu_value(prm[P_FPU_ABS] != 0.0, prm[P_FPU], node_q(t, node, -draw_score), visited_pol)
                cp = cpuct(prm[P_CPUCT], prm[P_FACTOR], prm[P_BASE], t.n[node])
            mult = puct_mult(cp, t.n[node])
            if is_root:  # read once, not in every scan (a child's N changes only by a revert below)
                for i in range(max_needed):
                    skip[i] = _root_skip(t.n, kid[i], i, best_root_child, best_node_n, remaining_playouts,
                                         has_filter, root_allowed)
            filled = -1
            while cur_limit > 0:
                best = LOWEST
                best_idx = -1
                best_without_u = LOWEST
                second_best = LOWEST
                has_second = False
                can_exit = False
                for idx in range(max_needed):
                    if idx > filled:  # (idx == filled + 1: the scans go in order)
                        x = kid[idx]
                        nstarted[idx] = (t.n[x] + t.nif[x]) if x >= 0 else 0
                        u = util[idx]
                        if u == LOWEST:  # not visited: the FPU (filled here, not for every edge)
                            u = F32(fpu)
                            util[idx] = u
                        score[idx] = pol[idx] * mult / F32(1 + nstarted[idx]) + u
                        filled += 1
                    ns = nstarted[idx]
                    if is_root and skip[idx] != 0:
                        continue
                    sc = score[idx]
                    if sc > best:
                        if best_idx >= 0:
                            has_second = True
                        second_best = best
                        best = sc
                        best_idx = idx
                        best_without_u = util[idx]
                    elif sc > second_best:
                        second_best = sc
                        has_second = True
                    if can_exit:
                        break
                    if ns == 0:
                        can_exit = True
                if best_idx < 0:
                    break  # every root move excluded (cannot happen: the best child stays in)
                new_visits = 0
                if has_second:
                    est = 2147483647
                    if best_without_u < second_best:
                        n1 = nstarted[best_idx] + 1
                        val = pol[best_idx] * mult / (second_best - best_without_u) - F32(n1) + F32(1.0)
                        if val > F32(1e9):
                            val = F32(1e9)
                        if val < F32(1.0):
                            val = F32(1.0)
                        est = np.int32(val)
                    if est < max_limit:
                        max_limit = est
                    new_visits = cur_limit if cur_limit < est else est
                else:
                    new_visits = cur_limit
                if best_idx >= vtp_last[lvl]:
                    for j in range(vtp_last[lvl] + 1, best_idx + 1):
                        vtp[lvl, j] = 0
                vtp[lvl, best_idx] += new_visits
                cur_limit -= new_visits
                child = kid[best_idx]
                if child < 0:
                    # GetOrSpawnNode (``spawn_child`` without its walk of the child list, and
                    # without a call passing the tree: ~24 atomic reference-count operations):
                    # ``kid`` holds every child of an edge below best_idx, so the new child
                    # goes after the closest one
                    prev = -1
                    for j in range(best_idx - 1, -1, -1):
                        if kid[j] >= 0:
                            prev = kid[j]
                            break
                    child = new_node(t, node, best_idx)
                    if prev < 0:
                        t.sibling[child] = t.child[node]
                        t.child[node] = child
                    else:
                        t.sibling[child] = t.sibling[prev]
                        t.sibling[prev] = child
                    kid[best_idx] = child
                if t.term[child] == TWO_FOLD:  # (test here: a call passing the tree costs ~0.15 µs)
                    reverted[0] += revert_two_fold(t, child, plen)
                    if is_root:  # the child's N changed
                        skip[best_idx] = _root_skip(t.n, child, best_idx, best_root_child, best_node_n,
                                                    remaining_playouts, has_filter, root_allowed)
                decremented = False
                if not (t.n[child] == 0 and t.nif[child] > 0):
                    t.nif[child] += 1
                    nstarted[best_idx] += 1
                    new_visits -= 1
                    decremented = True
                    if t.n[child] > 0 and t.term[child] == 0:
                        t.nif[child] += new_visits
                        nstarted[best_idx] += new_visits
                    score[best_idx] = pol[best_idx] * mult / F32(1 + nstarted[best_idx]) + util[best_idx]
                if decremented and (t.n[child] == 0 or t.term[child] != 0):
                    vtp[lvl, best_idx] -= 1
                    add_pick(picks, count, child, plen + 1, 1, 0, 0)
                if best_idx > vtp_last[lvl] and vtp[lvl, best_idx] > 0:
                    vtp_last[lvl] = best_idx
            is_root = False
        # go down into the next child with visits to perform
        lvl = plen - 1
        min_idx = path[lvl]
        found = False
        if vtp_last[lvl] > min_idx:
            # resume after the child last gone down into (this node's child list does not change
            # below it: spawning adds children to the nodes of the subtree only)
            c = t.child[node] if min_idx < 0 else t.sibling[path_child[lvl]]
            while c >= 0:
                k = np.int32(t.index[c])
                if k > vtp_last[lvl]:
                    break
                if k > min_idx and vtp[lvl, k] > 0:
                    path[lvl] = k
                    path_child[lvl] = c
                    path[plen] = -1
                    plen += 1
                    node = c
                    found = True
                    break
                c = t.sibling[c]
        if not found:
            node = t.parent[node]
            plen -= 1
