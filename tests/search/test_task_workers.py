"""lc0's task workers (``TaskWorkers``): a large pick round's leaves scanned in parallel, then
committed in pick order. Every decision must be the serial path's: same trees, same network
requests, same cache counts, same best moves; and lc0 0.32.1's rules for the worker count and
the split of a round."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from lc0py.backends.base import BackendInfo
from lc0py.backends.random_backend import RandomBackend
from lc0py.search import worker as worker_module
from lc0py.search.core.nncache import NNCache
from lc0py.search.core.tree import NodeTree
from lc0py.search.params import SearchParams
from lc0py.search.search import Search, SearchLimits
from lc0py.search.worker import lc0_rule_task_workers, split_round, task_workers
from lc0py.tools.benchmark import POSITIONS, split_position


def _info(runs_on_cpu: bool) -> BackendInfo:
    return BackendInfo(1, True, True, 256, runs_on_cpu=runs_on_cpu)


def test_task_workers_follow_lc0s_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worker_module.os, "cpu_count", lambda: 16)
    auto = SearchParams()
    assert lc0_rule_task_workers(auto, _info(True)) == 0  # a CPU backend: none
    assert lc0_rule_task_workers(auto, _info(False)) == 4  # min(16 / max(2 - 1, 1) - 1, 4)
    assert lc0_rule_task_workers(replace(auto, threads=5), _info(False)) == 3  # 16 / 4 - 1
    monkeypatch.setattr(worker_module.os, "cpu_count", lambda: 2)
    assert lc0_rule_task_workers(auto, _info(False)) == 1


def test_automatic_task_workers_are_none_and_a_set_count_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worker_module.os, "cpu_count", lambda: 16)
    auto = SearchParams()
    assert auto.task_workers == -1  # lc0's default value
    assert task_workers(auto, _info(False)) == 0  # measured slower on the H100 host: serial
    assert task_workers(replace(auto, task_workers=0), _info(False)) == 0
    assert task_workers(replace(auto, task_workers=3), _info(False)) == 3
    assert task_workers(replace(auto, task_workers=7), _info(True)) == 7


def test_split_round_gives_lc0s_ranges() -> None:
    picks = np.zeros((64, 5), np.int32)
    collisions = [3, 4, 10, 30, 31]
    picks[collisions, 4] = 1
    start, end = 2, 50  # 48 picks, 43 of them leaves
    ranges = split_round(picks, start, end, workers=4, per_task=8)
    # 43 leaves / 8 = 5 tasks (at most 4 + 1), 43 // 5 = 8 leaves each for the first 4
    assert len(ranges) == 5
    assert ranges[0][0] == start and ranges[-1][1] == end
    for (_, b), (c, _) in zip(ranges, ranges[1:], strict=False):
        assert b == c
    counts = [int(np.count_nonzero(picks[a:b, 4] == 0)) for a, b in ranges]
    assert counts == [8, 8, 8, 8, 11]
    assert all(picks[b - 1, 4] == 0 for a, b in ranges[:-1])  # a task ends on a leaf
    # few leaves: still two tasks at least, per lc0's clamp
    assert len(split_round(picks, 40, 50, workers=4, per_task=8)) == 2


def _search_all(params: SearchParams, positions: int, nodes: int) -> tuple[str, list[int], int]:
    import hashlib

    backend = RandomBackend()
    cache = NNCache(100000)
    digest = hashlib.sha256()
    parallel = 0
    for text in POSITIONS[:positions]:
        fen, moves = split_position(text)
        tree = NodeTree()
        tree.reset_to_position(fen, moves)
        search = Search(tree, backend, params, SearchLimits(nodes=nodes, smart_pruning=False), cache)
        search.run()
        search.join()
        parallel += search.worker.parallel_rounds
        t, k = tree.arrays, tree.num_nodes
        for a in (t.n, t.wl, t.d, t.m, t.parent, t.index, t.term, t.nedges, t.edge0):
            digest.update(np.ascontiguousarray(a[:k]).tobytes())
        e = int(t.meta[1])
        digest.update(t.emove[:e].tobytes())
        digest.update(t.ep[:e].tobytes())
        digest.update(str(search.best_move()).encode())
    return digest.hexdigest(), [cache.hits, cache.misses], parallel


@pytest.mark.parametrize("minibatch,overlap", [(32, False), (0, True)])
def test_parallel_extension_changes_nothing(minibatch: int, overlap: bool) -> None:
    base = SearchParams(minibatch_size=minibatch, overlap=overlap, task_workers=0)
    serial, serial_counts, none = _search_all(base, 3, 2500)
    assert none == 0
    tasks = replace(base, task_workers=3, minimum_processing_work=1, minimum_per_task_processing=1)
    parallel, parallel_counts, rounds = _search_all(tasks, 3, 2500)
    assert rounds > 0  # the parallel path ran
    assert parallel == serial
    assert parallel_counts == serial_counts


class _Tables:
    """A stand-in for the Syzygy tables: ``answer`` for every probe (None: the probe fails)."""

    def __init__(self, answer: int | None) -> None:
        self.answer, self.max_pieces, self.hits = answer, 4, 0
        self.probed: list[str] = []

    def probe_wdl(self, board: object) -> int | None:
        self.probed.append(str(board))
        return self.answer

    def hit(self) -> None:
        self.hits += 1


@pytest.mark.parametrize("answer", [None, 2])
def test_parallel_extension_with_table_probes_and_root_noise(answer: int | None) -> None:
    """Leaves left for the tables (KIND_TB_PROBE), Dirichlet noise at the root: the same with
    the scan in parallel."""

    def run(workers: int) -> tuple[bytes, list[str], int]:
        tables = _Tables(answer)
        params = SearchParams(
            overlap=False,
            minibatch_size=64,
            task_workers=workers,
            minimum_processing_work=1,
            minimum_per_task_processing=1,
            noise_epsilon=0.25,
            random_seed=3,
        )
        tree = NodeTree()
        tree.reset_to_position("3rk3/8/8/8/8/8/4P3/3QK3 w - - 0 1", [])  # Qxd8: 4 pieces, zeroing
        s = Search(
            tree,
            RandomBackend(),
            params,
            SearchLimits(nodes=1500, smart_pruning=False),
            NNCache(10000),
            tablebase=tables,
        )  # type: ignore[arg-type]
        s.run()
        s.join()
        t, k = tree.arrays, tree.num_nodes
        data = b"".join(
            np.ascontiguousarray(a[:k]).tobytes() for a in (t.n, t.wl, t.d, t.term, t.parent, t.ep[:1])
        )
        return data + str(s.best_move()).encode(), tables.probed, s.worker.parallel_rounds

    serial = run(0)
    parallel = run(3)
    assert parallel[2] > 0 and serial[1]  # the parallel path ran, and leaves were probed
    assert parallel[:2] == serial[:2]
