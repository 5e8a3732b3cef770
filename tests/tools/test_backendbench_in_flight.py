"""``backendbench --in-flight``: batches kept in flight (a multi-device backend's own count by
default), every batch read once, in order; lc0's one-at-a-time loop for a single backend."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest

from lc0py.backends.base import BackendInfo, NetworkOutput, PlanesBatch
from lc0py.backends.registry import create_backend
from lc0py.chess import PositionHistory
from lc0py.cli.main import main
from lc0py.tools.backendbench import bench_size, in_flight_for

ROOT = Path(__file__).resolve().parents[2]
TINY = str(ROOT / "weights" / "tiny-seed1.pb.gz")


class _Handle:
    def __init__(self, owner: CountingBackend, n: int) -> None:
        self.owner, self.n, self.read = owner, n, False

    def result(self) -> NetworkOutput:
        with self.owner.lock:
            assert not self.read, "a batch read twice"
            assert self.owner.order[0] is self, "results read out of order"
            self.owner.order.pop(0)
            self.read = True
            self.owner.outstanding -= 1
        n = self.n
        return NetworkOutput(np.ones((n, 1858), np.float32), np.full((n, 3), 1 / 3, np.float32),
                             np.zeros(n, np.float32))

    def done(self) -> bool:
        return True


class CountingBackend:
    """Counts the batches outstanding at once."""

    name = "counting"

    def __init__(self) -> None:
        self.info = BackendInfo(1, True, True, 256, asynchronous=True)
        self.lock = threading.Lock()
        self.order: list[_Handle] = []
        self.outstanding = self.most = self.sent = 0

    def evaluate_async(self, batch: PlanesBatch) -> _Handle:
        handle = _Handle(self, len(batch))
        with self.lock:
            self.order.append(handle)
            self.outstanding += 1
            self.sent += 1
            self.most = max(self.most, self.outstanding)
        return handle

    def evaluate(self, batch: PlanesBatch) -> NetworkOutput:
        return self.evaluate_async(batch).result()


@pytest.mark.parametrize("in_flight", [1, 3])
def test_bench_size_keeps_that_many_in_flight_and_reads_each_once(in_flight: int) -> None:
    backend = CountingBackend()
    stats = bench_size(backend, PositionHistory.from_fen(None), 1, 8, 10, in_flight=in_flight)
    assert backend.sent == 10 and backend.outstanding == 0 and not backend.order
    assert backend.most == in_flight
    assert stats.size == 8 and stats.samples == 9 and stats.nps > 0


def test_in_flight_defaults() -> None:
    assert in_flight_for(CountingBackend(), None) == 1  # a single backend: lc0's loop
    with create_backend("demux", TINY, "backend=random,(),()") as demux:
        assert in_flight_for(demux, None) == 2 and in_flight_for(demux, 5) == 5
    with create_backend("roundrobin", TINY, "backend=random,(),(),()") as rr:
        assert in_flight_for(rr, None) == 6


def test_cli_multi_backend_in_flight(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["backendbench", "-w", TINY, "-b", "roundrobin", "-o", "backend=random,(),()",
            "--batch-sizes", "4,8", "--batches", "5", "--json"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "roundrobin: 4 batches in flight" in captured.err
    rows = [json.loads(line) for line in captured.out.splitlines()]
    assert [r["size"] for r in rows] == [4, 8] and all(r["nps"] > 0 and r["samples"] == 4 for r in rows)


@pytest.mark.parametrize("value", ["0", "65", "x"])
def test_bad_in_flight_is_one_line(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["backendbench", "-w", TINY, "-b", "numpy", "--in-flight", value]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--in-flight" in err
