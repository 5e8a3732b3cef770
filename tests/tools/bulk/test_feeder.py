"""The device threads of a bulk job (``lc0py.tools.bulk.feeder``): batches in flight per device,
the next chunk's rows sent before the last batch is collected, batches cut across chunk
boundaries, every child of a multi-device backend fed by its own thread with the same results,
a device failure one error (no hang), and the per-stage profile in the summary."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from lc0py.api import load
from lc0py.errors import Lc0pyError
from lc0py.tools.bulk import evaluate_file
from lc0py.tools.bulk import job as J


def _fens(path: Path, count: int) -> Path:
    path.write_text("startpos\n" * count)
    return path


class Recording:
    """A backend that logs each batch sent and collected; the first send waits for ``gate``."""

    name = "recording"

    def __init__(self, inner: Any, gate: threading.Event | None = None) -> None:
        self.inner = inner
        self.info = inner.info
        self.events: list[str] = []
        self.gate = gate
        self.outstanding = 0
        self.most = 0

    def evaluate_async(self, batch: Any) -> Any:
        owner = self

        class Handle:
            def __init__(self) -> None:
                owner.events.append(f"send {len(batch)}")
                owner.outstanding += 1
                owner.most = max(owner.most, owner.outstanding)
                if owner.gate is not None:
                    owner.gate.wait()
                self.out = owner.inner.evaluate(batch)

            def result(self) -> Any:
                owner.events.append("collect")
                owner.outstanding -= 1
                return self.out

            def done(self) -> bool:
                return True

        return Handle()


def test_next_batch_is_sent_before_the_last_is_collected(tmp_path: Path) -> None:
    """Two batches in flight per device: chunk 2's batch goes to the device before chunk 1's
    result is collected, and the device gets its next batch before a result is reduced."""
    src = _fens(tmp_path / "p.fen", 12)
    settings = J.make_settings(src, None, "jsonl", 10, 4, "fen_only", (), None, "random")
    plan = J.prepare_job(src, tmp_path / "out", settings)
    gate = threading.Event()
    with load(None, "random") as net:
        backend = Recording(net.backend, gate)
        evaluator = J.ChunkEvaluator(backend, settings, batch=4, in_flight=2)  # type: ignore[arg-type]
        loader = J.ChunkLoader(plan, net.backend.info.input_format, inline=True)
        runs = [evaluator.start(loader.load(c)) for c in plan.chunks]  # the first send waits
        gate.set()
        evaluator.end_input()
        blocks = [evaluator.finish(r) for r in runs]
        evaluator.close()
    assert [len(b) for b, _ in blocks] == [4, 4, 4]
    assert backend.events == ["send 4", "send 4", "collect", "send 4", "collect", "collect"]
    assert backend.most == 2


def test_batches_cross_chunk_boundaries(tmp_path: Path) -> None:
    """Chunks of 3 rows, batches of 4: every batch full (no odd tail per chunk), and the parts
    equal those of a run with one batch per chunk."""
    src = _fens(tmp_path / "p.fen", 12)
    settings = J.make_settings(src, None, "jsonl", 0, 3, "fen_only", (), None, "random")
    plan = J.prepare_job(src, tmp_path / "out", settings)
    with load(None, "random") as net:
        backend = Recording(net.backend)
        summary = J.run_local(plan, backend, batch=4, in_flight=2)  # type: ignore[arg-type]
    assert summary.complete and summary.positions == 12 and summary.chunks == 4
    assert [e for e in backend.events if e.startswith("send")] == ["send 4"] * 3
    assert backend.most <= 2
    plain = evaluate_file(src, tmp_path / "plain", None, "random", chunk_records=3, batch=3, top=0)
    assert plain.complete
    for part in sorted((tmp_path / "plain").glob("part-*.jsonl")):
        assert (tmp_path / "out" / part.name).read_bytes() == part.read_bytes()


def test_devices_never_drain_between_chunks_larger_than_the_memory_bound(tmp_path: Path) -> None:
    """Chunks of 50 rows, far above the rows allowed to wait for the device (batch 4 x (2 in
    flight + 2) = 16): the next chunk still joins the stream before the last one's rows run out,
    so every batch is full (the job used to wait for each chunk to finish, sending its last 2
    rows as a partial batch and draining the device every chunk). The parts equal a plain run's;
    the profile says when the device got its first batch and returned its last."""
    src = _fens(tmp_path / "p.fen", 200)
    settings = J.make_settings(src, None, "jsonl", 0, 50, "fen_only", (), None, "random")
    plan = J.prepare_job(src, tmp_path / "out", settings)
    with load(None, "random") as net:
        backend = Recording(net.backend)
        summary = J.run_local(plan, backend, batch=4, in_flight=2)  # type: ignore[arg-type]
    assert summary.complete and summary.positions == 200 and summary.chunks == 4
    assert [e for e in backend.events if e.startswith("send")] == ["send 4"] * 50
    assert summary.profile is not None
    (device,) = summary.profile["devices"]
    assert device["partial_batches"] == 0 and device["batches"] == 50
    assert 0 <= device["first_batch_at_s"] <= device["last_result_at_s"] <= summary.seconds + 1e-3
    assert evaluate_file(src, tmp_path / "plain", None, "random", chunk_records=50, batch=50, top=0).complete
    for part in sorted((tmp_path / "plain").glob("part-*.jsonl")):
        assert (tmp_path / "out" / part.name).read_bytes() == part.read_bytes()


def test_every_child_has_its_own_thread_and_the_same_results(tmp_path: Path) -> None:
    lines = [
        "startpos",
        "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3",
        "8/8/8/4k3/8/8/4P3/4K3 w - - 0 1",
        "startpos | e2e4 e7e5 g1f3",
    ]
    src = tmp_path / "p.fen"
    src.write_text("\n".join(lines * 50) + "\n")
    common: dict[str, Any] = dict(chunk_records=16, batch=24, top=0)
    one = evaluate_file(src, tmp_path / "one", None, "demux", "backend=random,()", **common)
    three = evaluate_file(src, tmp_path / "three", None, "demux", "backend=random,(),(),()", **common)
    assert one.complete and three.complete and three.positions == one.positions == 200
    for part in sorted((tmp_path / "one").glob("part-*")):
        if part.suffix == ".jsonl":
            assert (tmp_path / "three" / part.name).read_bytes() == part.read_bytes()
    profile = three.profile
    assert profile is not None and len(profile["devices"]) == 3
    assert sum(d["rows"] for d in profile["devices"]) == 200
    assert all(d["max_in_flight"] <= 2 for d in profile["devices"])
    summary = json.loads((tmp_path / "three" / J.SUMMARY).read_text())
    for stage in ("read_s", "encode_s", "wait_input_s", "wait_devices_s", "write_s", "devices"):
        assert stage in summary["profile"]


class Failing:
    """A device whose third batch fails."""

    name = "failing"

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.info = inner.info
        self.sent = 0

    def evaluate_async(self, batch: Any) -> Any:
        self.sent += 1
        if self.sent == 3:
            raise Lc0pyError("device lost")
        return self.inner.evaluate_async(batch)


def test_a_device_failure_is_one_error_and_no_hang(tmp_path: Path) -> None:
    src = _fens(tmp_path / "p.fen", 40)
    settings = J.make_settings(src, None, "jsonl", 10, 4, "fen_only", (), None, "random")
    plan = J.prepare_job(src, tmp_path / "out", settings)
    with load(None, "random") as net, pytest.raises(Lc0pyError, match="device lost"):
        J.run_local(plan, Failing(net.backend), batch=4)  # type: ignore[arg-type]
    # what was written is whole: a rerun completes it
    again = evaluate_file(src, tmp_path / "out", None, "random", chunk_records=4)
    assert again.complete and again.positions == 40
