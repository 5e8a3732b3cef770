"""The bulk job on a local Ray cluster (CPU actors, ``random``/``numpy`` backends): the same
parts as the single-process run, resume, and a killed actor's chunk redone."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from lc0py.tools.bulk import evaluate_file

ray = pytest.importorskip("ray")
from lc0py.tools.bulk.ray_job import evaluate_file_on_ray  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
TINY = str(ROOT / "weights" / "tiny-seed1.pb.gz")


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    """One local cluster for the module (2 CPUs: the CI machine's)."""
    # this module's fault-injection hook travels by value (workers cannot import a test module)
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    if not ray.is_initialized():
        ray.init(
            num_cpus=2,
            include_dashboard=False,
            logging_level="error",
            log_to_driver=False,
            runtime_env={"env_vars": {"PYTHONPATH": os.environ.get("PYTHONPATH", "")}},
        )
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def positions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import chess

    src = tmp_path_factory.mktemp("ray") / "p.fen"
    board = chess.Board()
    lines = []
    for k in range(60):
        move = list(board.legal_moves)[k % board.legal_moves.count()] if board.legal_moves.count() else None
        if move is None or board.is_game_over():
            board = chess.Board()
            continue
        board.push(move)
        lines.append(board.fen())
    lines.insert(7, "not a fen")
    src.write_text("\n".join(lines) + "\n")
    return src


def _parts(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.glob("part-*.jsonl"))}


def test_equals_the_single_process_run(cluster: None, positions: Path, tmp_path: Path) -> None:
    local = evaluate_file(positions, tmp_path / "local", TINY, "numpy", chunk_records=8)
    remote = evaluate_file_on_ray(positions, tmp_path / "ray", TINY, "numpy", chunk_records=8, actors=2)
    assert remote.complete and (remote.positions, remote.bad) == (local.positions, local.bad) == (
        local.positions,
        1,
    )
    # fp32 sums differ in the last bit with the BLAS threads of a Ray actor: the same keys and
    # moves, values within the fp32 tolerance (the random backend's runs below are bit-equal)
    ray_rows, local_rows = _rows(tmp_path / "ray"), _rows(tmp_path / "local")
    assert [r["line"] for r in ray_rows] == [r["line"] for r in local_rows]
    for a, b in zip(ray_rows, local_rows, strict=True):
        assert set(a["policy"]) == set(b["policy"]) and a["legal"] == b["legal"]
        assert list(a["policy"].values()) == pytest.approx(list(b["policy"].values()), rel=1e-4, abs=1e-6)
        assert a["wdl"] == pytest.approx(b["wdl"], rel=1e-4, abs=1e-6)


def _rows(out: Path) -> list[dict]:  # type: ignore[type-arg]
    import json

    return [
        json.loads(line)
        for part in sorted(out.glob("part-*.jsonl"))
        for line in part.read_text().splitlines()
    ]


def _kill_once(chunk: int, attempt: int) -> None:
    if chunk == 2 and attempt == 0:  # the actor dies mid-chunk: evaluated, not written
        os.kill(os.getpid(), signal.SIGKILL)


def test_a_killed_actor_has_its_chunk_redone(cluster: None, positions: Path, tmp_path: Path) -> None:
    clean = evaluate_file(positions, tmp_path / "clean", None, "random", chunk_records=8)
    summary = evaluate_file_on_ray(
        positions, tmp_path / "ray", None, "random", chunk_records=8, actors=2, hook=_kill_once
    )
    assert summary.complete and summary.positions == clean.positions
    assert _parts(tmp_path / "ray") == _parts(tmp_path / "clean")


def test_resume_skips_what_is_done(cluster: None, positions: Path, tmp_path: Path) -> None:
    clean = evaluate_file(positions, tmp_path / "clean", None, "random", chunk_records=8)
    out = tmp_path / "job"
    evaluate_file(positions, out, None, "random", chunk_records=8)
    for k in (1, 4):  # as if the job had been stopped before these chunks
        (out / f"part-{k:06d}.done.json").unlink()
        (out / f"part-{k:06d}.jsonl").unlink()
    summary = evaluate_file_on_ray(positions, out, None, "random", chunk_records=8, actors=2)
    assert summary.complete and summary.chunks_run == 2 and summary.positions == clean.positions
    assert _parts(out) == _parts(tmp_path / "clean")


def test_a_bad_option_is_one_line(cluster: None, positions: Path, tmp_path: Path) -> None:
    from lc0py.errors import Lc0pyError

    with pytest.raises(Lc0pyError) as info:
        evaluate_file_on_ray(positions, tmp_path / "bad", None, "random", "zz=1", actors=1)
    assert str(info.value).startswith("--backend-opts: unknown option(s) zz") and "\n" not in str(info.value)


def test_the_command_runs_on_ray(
    cluster: None, positions: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from lc0py.cli.main import main

    argv = [
        "bulk-eval",
        str(positions),
        "-O",
        str(tmp_path / "cli"),
        "-b",
        "random",
        "--chunk",
        "16",
        "--ray",
        "--ray-actors",
        "2",
        "--profile",
        "--json",
    ]
    assert main(argv) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out.strip().splitlines()[-1])
    assert summary["complete"] and summary["chunks"] == 4 and summary["bad"] == 1
    # the actors' profiles: every device's rows, on the job's clock
    devices = summary["profile"]["devices"]
    assert [d["device"].split(":")[0] for d in devices] == ["actor 0", "actor 1"]
    assert sum(d["rows"] for d in devices) == summary["positions"]
    # 4 chunks dealt round the 2 actors (not all 4 to the first): both evaluated rows
    assert all(d["rows"] > 0 and 0 <= d["first_batch_at_s"] <= d["last_result_at_s"] for d in devices)
    assert "bulk-eval profile" in captured.err and "actor 1: random" in captured.err


def test_the_actor_reads_pgn_chunks_in_sub_ranges(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The actor's body alone (no Ray): PGN chunks read by its 2 reader processes as one-game
    sub-ranges, parts formatted in pieces by its 2 writers, give the same parts and records as
    the local run; the illegal game is reported."""
    from lc0py.tools.bulk import job as J
    from lc0py.tools.bulk.ray_job import ChunkWorker
    from tests.tools.bulk.test_workers import pgn_file

    src = pgn_file(tmp_path / "g.pgn", 12)
    clean = evaluate_file(src, tmp_path / "clean", None, "random", chunk_records=5, workers=1)
    monkeypatch.setattr(J, "PART_GAMES", 1)
    monkeypatch.setattr(J, "FIRST_PART_GAMES", 1)
    settings = J.make_settings(src, None, "jsonl", 10, 5, "fen_only", (), None, "random")
    plan = J.prepare_job(src, tmp_path / "actor", settings)
    worker = ChunkWorker(plan, None, "random", None, 0, 0, None, parse_workers=2, writers=2)
    try:
        assert worker.loader.parts(plan.chunks[1]) == 2
        results = [worker.run(c.to_list(), 0) for c in plan.chunks]
    finally:
        worker.loader.close()
        if worker.writers is not None:
            worker.writers.shutdown()
        worker.evaluator.close()
        worker.net.close()
    assert [r["chunk"] for r in results] == [0, 1, 2]
    assert sum(r["positions"] for r in results) == clean.positions
    assert [b["where"].split(" (")[0] for r in results for b in r["bad"]] == [f"{src}: game 6"]
    clean_files = {p.name: p.read_bytes() for p in sorted((tmp_path / "clean").glob("part-*"))}
    assert {p.name: p.read_bytes() for p in sorted((tmp_path / "actor").glob("part-*"))} == clean_files
