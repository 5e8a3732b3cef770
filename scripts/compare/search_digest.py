#!/usr/bin/env python
"""A digest of whole search trees, to prove a speed change kept every search decision.

Runs searches on the ``random`` backend (lc0's benchmark positions, MinibatchSize 1 / 32 /
default, SearchOverlap off and on, fresh tree per position, one NN cache per setting) and prints
one SHA-256 over every node's visits, values (wl, d, m), parent, edge index and terminal kind,
plus each search's best move. Run it on two trees (e.g. ``main`` and a branch) and compare:
equal digests mean the same picks, visits and backups, bit for bit.

    PYTHONPATH=$PWD python scripts/compare/search_digest.py [--positions 12] [--nodes 10000]
        [--task-workers 0] [--min-work 20]

``--task-workers`` (lc0's TaskWorkers; default 0, the serial path) and ``--min-work``
(MinimumProcessingWork) prove the task workers' parallel extension changes nothing: the digest
with ``--task-workers 0`` equals the one with ``--task-workers 3 --min-work 1``.
"""

from __future__ import annotations

import argparse
import hashlib

import numpy as np

from lc0py.backends.registry import create_backend
from lc0py.search.core.nncache import NNCache
from lc0py.search.core.tree import NodeTree
from lc0py.search.params import SearchParams
from lc0py.search.search import Search, SearchLimits
from lc0py.tools.benchmark import POSITIONS, split_position


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--positions", type=int, default=12)
    ap.add_argument("--nodes", type=int, default=10000, help="per search (MinibatchSize 1: 3000 at most)")
    ap.add_argument("--task-workers", type=int, default=0, help="lc0's TaskWorkers (-1: lc0's rule)")
    ap.add_argument("--min-work", type=int, default=20, help="lc0's MinimumProcessingWork")
    ap.add_argument("--per-task", type=int, default=8, help="lc0's MinimumPerTaskProcessing")
    args = ap.parse_args()
    backend = create_backend("random", None, None)
    digest = hashlib.sha256()
    for minibatch in (1, 32, 0):
        nodes = min(args.nodes, 3000) if minibatch == 1 else args.nodes
        for overlap in (False, True):
            params = SearchParams(
                minibatch_size=minibatch, overlap=overlap, task_workers=args.task_workers,
                minimum_processing_work=args.min_work, minimum_per_task_processing=args.per_task,
            )
            cache = NNCache(200000)
            for text in POSITIONS[: args.positions]:
                fen, moves = split_position(text)
                tree = NodeTree()
                tree.reset_to_position(fen, moves)
                search = Search(tree, backend, params, SearchLimits(nodes=nodes, smart_pruning=False), cache)
                search.run()
                search.join()
                t, k = tree.arrays, tree.num_nodes
                for a in (t.n, t.wl, t.d, t.m, t.parent, t.index, t.term):
                    digest.update(np.ascontiguousarray(a[:k]).tobytes())
                digest.update(str(search.best_move()).encode())
    print(digest.hexdigest())


if __name__ == "__main__":
    main()
