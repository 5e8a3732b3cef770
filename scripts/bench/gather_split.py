#!/usr/bin/env python
"""Where the compiled gather's time goes: picking, leaf extension (and its parts), the rest.

Runs lc0's benchmark positions with the ``random`` backend (or ``--backend numpy --weights``),
replacing the worker's compiled ``gather.gather_minibatch`` by a Python replay of the same loop
that calls its compiled pieces one by one and times each (``perf_counter_ns``; the trees, the
requests and every decision are those of the compiled loop). Before each round's real
``extend_picks``, read-only probes run the same leaves on a copy of the path cache, cumulatively:

- ``replay``: the positions along each leaf's path (``leaves.position_row``);
- ``+movegen``: legal moves (``board.gen_legal``);
- ``+rules+cache``: game-over and draw rules, the position hash and an NN-cache probe;
- ``+encode``: the 112 planes and the policy indices of each leaf the cache lacks.

``extend`` is the real ``extend_picks`` (the probes' work plus edge reservation, the tree's
writes, the cache hit's priors read and edge sort). ``rest``: out-of-order backup and collision
settling. Each timed call also pays Python's call overhead (``--overhead`` prints it).

    PYTHONPATH=$PWD python scripts/bench/gather_split.py --nodes 5000 --positions 3
        [--minibatch-size 0] [--backend random|numpy --weights NET]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

from lc0py.backends.registry import create_backend
from lc0py.chess.core import board as B
from lc0py.chess.core.encode import encode, policy_indices
from lc0py.search import worker as W
from lc0py.search.core import gather as G
from lc0py.search.core import leaves as L
from lc0py.search.core import nncache as C
from lc0py.search.core.jit import njit
from lc0py.search.core.nncache import NNCache
from lc0py.search.core.pick import pick_nodes
from lc0py.search.core.rescale import P_TB_PIECES
from lc0py.search.core.tree import NodeTree
from lc0py.search.fastcall import Resolved
from lc0py.search.params import SearchParams
from lc0py.search.search import Search, SearchLimits
from lc0py.tools.benchmark import POSITIONS, split_position

PARTS = ("pick", "replay", "+movegen", "+rules+cache", "+encode", "extend", "rest")


@njit
def probe_leaves(
    t, root, picks, start, end, pos, cache, input_format, fill, level, req_masks, req_values, req_idx
):  # type: ignore[no-untyped-def]
    """The read-only part of ``extend_picks`` up to ``level`` (0 replay, 1 movegen, 2 rules and
    cache, 3 encoding); returns the leaves it touched."""
    moves = np.empty(B.MAX_MOVES, np.uint16)
    chain = np.empty(L.MAX_PATH, np.int32)
    touched = 0
    for i in range(start, end):
        if picks[i, 4] != 0:
            continue
        node = picks[i, 0]
        if t.term[node] != 0:
            continue
        touched += 1
        row = L.position_row(t.parent, t.emove, t.edge0, t.index, root, node, pos, chain)
        if level == 0:
            continue
        p = pos.hist[row]
        n = B.gen_legal(p, moves)
        if level == 1 or n == 0:
            continue
        if node != root and (B.insufficient_material(p) or pos.r50[row] >= 100 or pos.reps[row] >= 2):
            continue
        h = C.position_hash(pos.keys[row], pos.reps[row])
        if C.probe_only(cache, h, n) or level == 2:
            continue
        transform = encode(pos.hist, pos.reps, row + 1, input_format, fill, req_masks[0], req_values[0])
        policy_indices(p, moves, n, transform, req_idx[0])
    return touched


def copy_positions(pos: L.Positions) -> L.Positions:
    return L.Positions(*(a.copy() for a in pos))


class SplitGather:
    """Stands in for ``gather.gather_minibatch`` (same arguments, same effects), timing its parts."""

    def __init__(self) -> None:
        self.ns = dict.fromkeys(PARTS, 0)
        self.rounds = 0
        self.leaves = 0
        self.picks = 0
        self.gathers = 0
        self.min_work = 20
        self.big_rounds = self.big_leaves = 0
        # entry points resolved once (numba's typing of the tree's tuple costs 20-40 us a call)
        self.pick = Resolved(pick_nodes)
        self.probe = Resolved(probe_leaves)
        self.extend = Resolved(L.extend_picks)
        self.resolve = Resolved(G.resolve_out_of_order)
        self.settle = Resolved(G.settle_collisions)

    def __call__(
        self,
        t: Any,
        root: int,
        prm: np.ndarray,
        allowed: np.ndarray,
        remaining: float,
        best: int,
        picks: np.ndarray,
        kinds: np.ndarray,
        vals: np.ndarray,
        req: L.Requests,
        pos: L.Positions,
        cache: C.CacheArrays,
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
        pw: Any,
        xw: L.ExtendWork,
        stop: np.ndarray,
        root_noise: np.ndarray,
        staged: Any = None,
        min_parallel: int = 0,
    ) -> int:
        assert len(root_noise) == 0, "no Dirichlet noise in this replay"
        clock = time.perf_counter_ns
        ns = self.ns
        counter = np.zeros(1, np.int64)
        reverted = np.zeros(1, np.int64)
        self.gathers += 1
        while state[G.G_MB] < target and stats[G.S_OOO] - state[G.G_OOO_START] < max_ooo:
            if state[G.G_MB] > 0 and req.count[0] == 0:
                return G.GATHER_DONE
            ooo = stats[G.S_OOO] - state[G.G_OOO_START]
            limit = int(min(state[G.G_LEFT], target - state[G.G_MB], max_ooo - ooo))
            rows = limit + 2
            start = int(state[G.G_COUNT])
            if (
                len(t.n) - t.meta[0] < rows
                or len(t.emove) - t.meta[1] < rows * G.EDGES_PER_VISIT
                or start + rows > len(picks)
                or req.count[0] + rows > len(req.nodes)
            ):
                state[G.G_NEED] = rows
                return G.GATHER_NEEDS_SPACE
            counter[0] = start
            reverted[0] = 0
            c0 = clock()
            self.pick(t, root, limit, prm, allowed, remaining, best, picks, counter, reverted, vtp, pw)
            ns["pick"] += clock() - c0
            stats[G.S_REVERTED] += reverted[0]
            end = int(counter[0])
            self.rounds += 1
            self.picks += end - start
            for level, name in enumerate(PARTS[1:5]):
                scratch = copy_positions(pos)
                c0 = clock()
                touched = self.probe(
                    t,
                    root,
                    picks,
                    start,
                    end,
                    scratch,
                    cache,
                    input_format,
                    fill,
                    level,
                    req.masks,
                    req.values,
                    req.idx,
                )
                ns[name] += clock() - c0
            self.leaves += touched
            nc = int(np.count_nonzero(picks[start:end, 4] == 0))
            if nc >= self.min_work:  # rounds lc0's task workers would split (MinimumProcessingWork)
                self.big_rounds += 1
                self.big_leaves += nc
            c0 = clock()
            self.extend(
                t,
                root,
                picks,
                start,
                end,
                pos,
                cache,
                use_cache,
                two_fold,
                input_format,
                fill,
                kinds,
                vals,
                req,
                prm,
                prm[P_TB_PIECES] > 0,
                xw,
            )
            ns["extend"] += clock() - c0
            c0 = clock()
            for i in range(start, end):
                if picks[i, 4] == 0:
                    state[G.G_MB] += 1
            before = stats[G.S_OOO]
            end = self.resolve(t, root, picks, kinds, vals, start, end, out_of_order, sticky, stats)
            state[G.G_MB] -= stats[G.S_OOO] - before
            state[G.G_COUNT] = end
            state[G.G_LEFT] = self.settle(t, root, picks, start, end, int(state[G.G_LEFT]))
            ns["rest"] += clock() - c0
            if state[G.G_LEFT] <= 0 or stop[0] != 0:
                return G.GATHER_DONE
        return G.GATHER_DONE


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--positions", type=int, default=3)
    ap.add_argument("--minibatch-size", type=int, default=0)
    ap.add_argument("--backend", default="random")
    ap.add_argument("--weights", "-w", default=None)
    args = ap.parse_args()
    backend = create_backend(args.backend, args.weights, None)
    params = SearchParams(minibatch_size=args.minibatch_size, overlap=False)
    cache = NNCache(200000)
    split = SplitGather()
    original = Resolved

    def resolved(dispatcher: Any) -> Any:  # the worker's gather call site gets the replay
        return split if dispatcher is G.gather_minibatch else original(dispatcher)

    W.Resolved = resolved  # type: ignore[misc,assignment]
    cpu0 = time.process_time()
    nodes = 0
    for k, text in enumerate(POSITIONS[: args.positions]):
        fen, moves = split_position(text)
        tree = NodeTree()
        tree.reset_to_position(fen, moves)
        s = Search(tree, backend, params, SearchLimits(nodes=args.nodes, smart_pruning=False), cache)
        s.run()
        s.join()
        nodes += tree.num_nodes
        if k == 0:  # the first search compiled the probes: count from the second on
            split.ns = dict.fromkeys(PARTS, 0)
            split.rounds = split.leaves = split.picks = split.gathers = split.big_rounds = (
                split.big_leaves
            ) = 0
            cpu0 = time.process_time()
            nodes = 0
    cpu = time.process_time() - cpu0
    ns = split.ns
    ext = ns["extend"]
    gather = ns["pick"] + ext + ns["rest"]
    print(
        f"positions {args.positions - 1} timed, {split.gathers} gathers, {split.rounds} rounds, "
        f"{split.picks} picks, {split.leaves} leaves extended; process CPU {cpu:.2f} s for {nodes} nodes"
    )
    rounds = max(1, split.rounds)
    print(
        f"per round: {split.picks / rounds:.1f} picks, {split.leaves / rounds:.1f} leaves to extend; rounds "
        f"with >= {split.min_work} non-collision picks (lc0's MinimumProcessingWork): "
        f"{split.big_rounds} ({split.big_leaves} leaves)"
    )
    print(f"{'part':16s} {'ms':>9s} {'% gather':>9s} {'us/leaf':>8s}")
    for name in PARTS:
        print(f"{name:16s} {ns[name] / 1e6:9.1f} {100.0 * ns[name] / gather:9.1f} "
              f"{ns[name] / 1e3 / max(1, split.leaves):8.2f}")

    def of_ext(x: float) -> str:
        return f"{100.0 * x / max(1, ext):.0f} %"

    print(
        f"gather (pick+extend+rest) {gather / 1e6:.1f} ms; extension {100.0 * ext / gather:.1f} %: replay "
        f"{of_ext(ns['replay'])}, movegen {of_ext(ns['+movegen'] - ns['replay'])}, rules+cache "
        f"{of_ext(ns['+rules+cache'] - ns['+movegen'])}, encode "
        f"{of_ext(ns['+encode'] - ns['+rules+cache'])}, "
        f"tree writes+sort {of_ext(ext - ns['+encode'])}"
    )

if __name__ == "__main__":
    main()
