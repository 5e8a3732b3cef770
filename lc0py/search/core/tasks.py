"""lc0's task workers for leaf extension, compiled: a scan that runs in parallel, a serial commit.

``leaves.extend_picks`` does everything for a range of picks in pick order. Split in two here:

- ``scan_picks`` (any number at once, on disjoint ranges of one round's picks, each with its own
  ``Positions`` path cache): positions replayed, legal moves, game-over and draw rules, the
  NN-cache slot, the planes and policy indices of each network leaf, all staged per pick in
  ``Staged`` (row ``i - start``). It only reads the tree and the cache (nothing writes them
  during a gather: results are stored between gathers, on the search thread).
- ``commit_picks`` (the search thread, in pick order): what ``extend_picks`` writes -- terminals,
  edges reserved and filled, a cache hit's priors sorted and its value, hit/miss counts, request
  rows in pick order -- from the staged rows, so the tree, the requests and every later
  decision are those of the serial path bit for bit.

A scan reads nothing another pick of the round writes: the picked leaves are distinct nodes
without children, never on each other's paths.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from lc0py.chess.core import board as B
from lc0py.chess.core.encode import encode, policy_indices
from lc0py.search.core import nncache as C
from lc0py.search.core.arrays import TreeArrays, reserve_edges
from lc0py.search.core.backup import make_terminal
from lc0py.search.core.jit import njit
from lc0py.search.core.leaves import (
    KIND_CACHE_HIT,
    KIND_NN,
    KIND_NONE,
    KIND_TB_PROBE,
    KIND_TERMINAL,
    MAX_PATH,
    SORT_STACK,
    Positions,
    Requests,
    leaf_rule,
    position_row,
    sort_edges,
)
from lc0py.search.core.rescale import rescale_leaf


class Staged(NamedTuple):
    """One round's scanned picks, row ``i - start`` for pick ``i``."""

    kind: np.ndarray  # int32 [cap]: KIND_*
    nmoves: np.ndarray  # int32 [cap]
    moves: np.ndarray  # uint16 [cap, MAX_MOVES] in move-generation order
    result: np.ndarray  # int32 [cap]: a terminal's result
    plies: np.ndarray  # float32 [cap]: a terminal's plies left
    tkind: np.ndarray  # int32 [cap]: a terminal's kind (END_OF_GAME, TWO_FOLD)
    slot: np.ndarray  # int64 [cap]: a cache hit's slot
    key: np.ndarray  # uint64 [cap]: the position's hash
    idx: np.ndarray  # int16 [cap, 256]: policy indices of a network leaf
    masks: np.ndarray  # uint64 [cap, 112]
    values: np.ndarray  # float32 [cap, 112]


def make_staged(cap: int) -> Staged:
    """Room for a round of ``cap`` picks (the minibatch size + 2)."""
    return Staged(
        np.full(cap, KIND_NONE, np.int32),
        np.zeros(cap, np.int32),
        np.zeros((cap, B.MAX_MOVES), np.uint16),
        np.zeros(cap, np.int32),
        np.zeros(cap, np.float32),
        np.zeros(cap, np.int32),
        np.zeros(cap, np.int64),
        np.zeros(cap, np.uint64),
        np.zeros((cap, 256), np.int16),
        np.zeros((cap, 112), np.uint64),
        np.ones((cap, 112), np.float32),
    )


def copy_positions(pos: Positions) -> Positions:
    """A task's own path cache over the same game rows."""
    return Positions(*(a.copy() for a in pos))


@njit
def scan_picks(
    t: TreeArrays,
    root: int,
    picks: np.ndarray,
    start: int,
    lo: int,
    hi: int,
    pos: Positions,
    cache: C.CacheArrays,
    use_cache: bool,
    two_fold: bool,
    input_format: int,
    fill: int,
    tb_pieces: int,
    st: Staged,
) -> None:
    """``extend_picks``' reading part for picks ``[lo, hi)`` of the round that starts at ``start``
    (same rules, same order of checks), staged in ``st``; ``tb_pieces`` 0: no tablebase probes."""
    chain = np.empty(MAX_PATH, np.int32)
    for i in range(lo, hi):
        k = i - start
        st.kind[k] = KIND_NONE
        if picks[i, 4] != 0:
            continue
        node = picks[i, 0]
        if t.term[node] != 0:
            continue
        depth = picks[i, 1]
        row = position_row(t.parent, t.emove, t.edge0, t.index, root, node, pos, chain)
        p = pos.hist[row]
        moves = st.moves[k]
        n = B.gen_legal(p, moves)
        kind, result, plies, tkind = leaf_rule(p, n, node, root, depth, pos, row, two_fold, tb_pieces)
        if kind == KIND_TERMINAL:
            st.result[k] = result
            st.plies[k] = plies
            st.tkind[k] = tkind
        if kind != KIND_NONE:
            st.kind[k] = kind
            continue
        st.nmoves[k] = n
        h = C.position_hash(pos.keys[row], pos.reps[row])
        st.key[k] = h
        if use_cache:
            s = C.find(cache, h, n)
            if s >= 0:
                st.slot[k] = s
                st.kind[k] = KIND_CACHE_HIT
                continue
        transform = encode(pos.hist, pos.reps, row + 1, input_format, fill, st.masks[k], st.values[k])
        policy_indices(p, moves, n, transform, st.idx[k])
        st.kind[k] = KIND_NN


@njit
def commit_picks(
    t: TreeArrays,
    picks: np.ndarray,
    start: int,
    end: int,
    st: Staged,
    cache: C.CacheArrays,
    use_cache: bool,
    kinds: np.ndarray,
    vals: np.ndarray,
    req: Requests,
    prm: np.ndarray,
) -> None:
    """``extend_picks``' writes for the scanned picks ``[start, end)``, in pick order."""
    codes = np.empty(B.MAX_MOVES, np.uint16)
    work = np.empty(B.MAX_MOVES, np.uint32)
    stack = np.empty((3, SORT_STACK), np.int64)
    for i in range(start, end):
        k = i - start
        kind = st.kind[k]
        kinds[i] = kind
        if kind == KIND_NONE or kind == KIND_TB_PROBE:
            continue
        node = picks[i, 0]
        if kind == KIND_TERMINAL:
            make_terminal(t, node, np.int64(st.result[k]), st.plies[k], np.int64(st.tkind[k]))
            continue
        n = st.nmoves[k]
        e0 = reserve_edges(t, n)
        t.edge0[node] = e0
        t.nedges[node] = n
        for j in range(n):
            t.emove[e0 + j] = st.moves[k, j]
            t.ep[e0 + j] = 0
        if kind == KIND_CACHE_HIT:
            s = st.slot[k]
            cache.meta[C.C_HITS] += 1
            C.read_codes(cache, s, codes)
            for j in range(n):
                t.ep[e0 + j] = codes[j]
            sort_edges(t, node, work, stack)
            v, dd = rescale_leaf(prm, picks[i, 1], -cache.qdm[s, 0], cache.qdm[s, 1])
            vals[i, 0] = -v
            vals[i, 1] = dd
            vals[i, 2] = cache.qdm[s, 2]
            t.v[node] = -cache.qdm[s, 0]
            continue
        if use_cache:
            cache.meta[C.C_MISSES] += 1
        b = req.count[0]
        req.count[0] = b + 1
        req.masks[b, :] = st.masks[k, :]
        req.values[b, :] = st.values[k, :]
        req.idx[b, :n] = st.idx[k, :n]
        req.nodes[b] = node
        req.keys[b] = st.key[k]
        req.nmoves[b] = n
