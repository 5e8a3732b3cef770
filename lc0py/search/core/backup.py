"""Backup, terminals and bounds, compiled (``DoBackupUpdateSingleNode``, ``MaybeSetBounds``,
``Node::MakeTerminal``, ``FinalizeScoreUpdate``, ``AdjustForTerminal``; lc0's float types)."""

from __future__ import annotations

import numpy as np

from lc0py.search.core.arrays import TWO_FOLD, TreeArrays
from lc0py.search.core.jit import njit

F32 = np.float32


@njit
def make_terminal(t: TreeArrays, x: int, result: int, plies_left: float, kind: int) -> None:
    """``result`` from the view of the player who moved into ``x``: 1 win, 0 draw, −1 loss."""
    if kind != TWO_FOLD:
        t.lower[x] = result
        t.upper[x] = result
    t.term[x] = kind
    t.m[x] = F32(plies_left)
    if result == 0:
        t.wl[x] = 0.0
        t.d[x] = F32(1.0)
    elif result > 0:
        t.wl[x] = 1.0
        t.d[x] = F32(0.0)
    else:
        t.wl[x] = -1.0
        t.d[x] = F32(0.0)
        p = t.parent[x]
        if p >= 0:
            t.ep[t.edge0[p] + t.index[x]] = 0  # a proven loss: its prior is cleared


@njit
def finalize(t: TreeArrays, x: int, v: float, d: float, m: float, multi: int) -> None:
    n = t.n[x]
    t.wl[x] += multi * (np.float64(F32(v)) - t.wl[x]) / (n + multi)
    t.d[x] += F32(multi) * (F32(d) - t.d[x]) / F32(n + multi)
    t.m[x] += F32(multi) * (F32(m) - t.m[x]) / F32(n + multi)
    t.n[x] = n + multi
    t.nif[x] -= multi


@njit
def maybe_set_bounds(t: TreeArrays, p: int, m: float, fix: np.ndarray, delta: np.ndarray) -> bool:
    """Bounds of ``p`` from all its edges; proven → terminal. ``fix[0]``: n_to_fix,
    ``delta``: (v, d, m) deltas. Returns True when bounds were set."""
    losing_m = F32(0.0)
    prefer_tb = False
    lower = -1
    upper = -1
    e = 0
    ne = np.int32(t.nedges[p])
    c = t.child[p]
    while e < ne:
        while c >= 0 and t.index[c] < e:
            c = t.sibling[c]
        has = c >= 0 and t.index[c] == e
        el = np.int32(t.lower[c]) if has else -1
        eu = np.int32(t.upper[c]) if has else 1
        if el > lower:
            lower = el
        if eu > upper:
            upper = eu
        is_tb = has and t.term[c] == 2
        if el == 1 and not is_tb:
            prefer_tb = False
            break
        elif eu == -1:
            cm = t.m[c] if has else F32(0.0)
            if cm > losing_m:
                losing_m = cm
        prefer_tb = prefer_tb or is_tb
        e += 1
    if lower == -1 and upper == 1:
        return False
    if lower == upper:
        fix[0] = t.n[p]
        cur_v = F32(t.wl[p])
        cur_d = t.d[p]
        cur_m = t.m[p]
        mm = F32(m)
        if upper == -1 and losing_m > mm:
            mm = losing_m
        make_terminal(t, p, -upper, mm + F32(1.0), 2 if prefer_tb else 1)
        delta[0] = F32(-(t.wl[p] - np.float64(cur_v)))
        delta[1] = t.d[p] - cur_d
        delta[2] = t.m[p] - cur_m
    else:
        t.lower[p] = -upper
        t.upper[p] = -lower
    return True


@njit
def backup_rows(
    t: TreeArrays, root: int, picks: np.ndarray, vals: np.ndarray, rows: np.ndarray, count: int, sticky: bool
) -> None:
    """``DoBackupUpdateSingleNode`` for the visits ``picks[rows[k]]``, ``k < count``, in that
    order: row ``i`` visits node ``picks[i, 0]`` ``picks[i, 2]`` times with the value
    ``(-vals[i, 0], vals[i, 1], vals[i, 2])`` (v, d, m from the view of the player who moved
    into the node; a terminal node's own value replaces it).

    A whole batch in one call: a call that passes the tree's arrays costs two atomic
    reference-count operations per array it uses (~30 here), more than a short visit's
    backup itself."""
    fix = np.zeros(1, np.int64)
    delta = np.zeros(3, np.float32)
    for k in range(count):
        i = rows[k]
        node = picks[i, 0]
        multi = picks[i, 2]
        v = -F32(vals[i, 0])
        d = F32(vals[i, 1])
        m = F32(vals[i, 2])
        update_bounds = sticky and t.term[node] != 0 and t.n[node] == 0
        fix[0] = 0
        delta[0] = delta[1] = delta[2] = F32(0.0)
        x = node
        while x >= 0:
            if t.term[x] != 0:
                v = F32(t.wl[x])
                d = t.d[x]
                m = t.m[x]
            finalize(t, x, v, d, m, multi)
            if fix[0] > 0 and t.term[x] == 0:
                nn = t.n[x]
                t.wl[x] += np.float64(F32(fix[0]) * delta[0] / F32(nn))
                t.d[x] += F32(fix[0]) * delta[1] / F32(nn)
                t.m[x] += F32(fix[0]) * delta[2] / F32(nn)
            if x == root:
                break
            p = t.parent[x]
            if p < 0:
                break
            if t.term[p] != 0:
                fix[0] = 0
            update_bounds = (
                update_bounds and p != root and t.term[p] == 0 and maybe_set_bounds(t, p, m, fix, delta)
            )
            v = -v
            delta[0] = -delta[0]
            m = m + F32(1.0)
            x = p


@njit
def backup(
    t: TreeArrays, node: int, root: int, v: float, d: float, m: float, multi: int, sticky: bool
) -> None:
    """``DoBackupUpdateSingleNode`` for one visit whose value (v, d, m) is from the view of the
    player who moved into ``node`` (``backup_rows`` with one row)."""
    picks = np.zeros((1, 5), np.int32)
    picks[0, 0] = node
    picks[0, 2] = multi
    vals = np.empty((1, 3), np.float32)
    vals[0, 0] = -F32(v)
    vals[0, 1] = F32(d)
    vals[0, 2] = F32(m)
    backup_rows(t, root, picks, vals, np.zeros(1, np.int64), 1, sticky)


@njit
def cancel_collision(t: TreeArrays, node: int, root: int, multi: int) -> None:
    """Undo a collision's visits in flight (from the node's parent up to the root)."""
    x = t.parent[node] if node != root else -1
    while x >= 0:
        t.nif[x] -= multi
        if x == root:
            break
        x = t.parent[x]


@njit
def add_in_flight(t: TreeArrays, node: int, root: int, extra: int) -> None:
    """Enlarge a collision by ``extra`` visits (lc0's collision upsizing in GatherMinibatch)."""
    x = t.parent[node] if node != root else -1
    while x >= 0:
        t.nif[x] += extra
        if x == root:
            break
        x = t.parent[x]
