"""``bulk-eval --workers N``: PGN chunks read in worker processes (python-chess) give the same
parts as in the job's own process (FEN: no process, the same parts), a job killed with SIGKILL
(workers and all) resumes without loss or duplicates, bad FENs and games are reported and skipped
as without workers. The device feeding itself: tests/tools/bulk/test_feeder.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import chess
import pytest

from lc0py.chess.testing import special_move_games
from lc0py.tools.bulk import evaluate_file
from lc0py.tools.bulk import job as J

ROOT = Path(__file__).resolve().parents[3]


def fen_file(path: Path, count: int = 120) -> Path:
    lines = ["# random games"]
    for k, (start, moves) in enumerate(special_move_games(41, count)):
        board = chess.Board(start)
        for m in moves:
            board.push_uci(m)
        lines.append(board.fen() if k % 2 else f"{start} | {' '.join(moves)}")
    path.write_text("\n".join(lines) + "\n")
    return path


def pgn_file(path: Path, count: int = 24) -> Path:
    games = []
    for k, (start, moves) in enumerate(special_move_games(42, count)):
        board = chess.Board(start)
        san = []
        for m in moves:
            san.append(board.san(chess.Move.from_uci(m)))
            board.push_uci(m)
        text = " ".join(san) if k != 5 else "e4 e5 Ke3 Qxe3"  # game 6: an illegal move
        games.append(f'[Event "g{k + 1}"]\n\n{text} *\n')
    path.write_text("\n".join(games))
    return path


def parts(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.glob("part-*"))}


@pytest.mark.parametrize("kind", ["fen", "pgn"])
def test_workers_give_the_same_parts(tmp_path: Path, kind: str) -> None:
    src = fen_file(tmp_path / "p.fen") if kind == "fen" else pgn_file(tmp_path / "g.pgn")
    chunk = 16 if kind == "fen" else 5
    results = {}
    for workers in (1, 2):
        out = tmp_path / f"out{workers}"
        summary = evaluate_file(src, out, None, "random", chunk_records=chunk, workers=workers, top=0)
        assert summary.complete
        results[workers] = parts(out)
    # and this process alone (the loader inline, as a Ray actor runs it)
    settings = J.make_settings(src, None, "jsonl", 0, chunk, "fen_only", (), None, "random")
    plan = J.prepare_job(src, tmp_path / "inline", settings)
    from lc0py.api import load

    with load(None, "random") as net:
        loader = J.ChunkLoader(plan, net.backend.info.input_format, inline=True)
        evaluator = J.ChunkEvaluator(net.backend, settings)
        for c in plan.chunks:
            block, record = evaluator.evaluate(loader.load(c))
            J.write_chunk(plan, block, record)
        evaluator.close()
    assert results[1] == results[2] == parts(tmp_path / "inline")
    assert len(results[1]) >= 6  # several chunks, parts and records


def test_bad_records_reported_and_skipped_in_workers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "mixed.fen"
    src.write_text("startpos\nnot a fen\nstartpos | e2e4 e7e5 e1e3\n8/8/8/8/8/8/8/4K3 w - - 0 1\nstartpos\n")
    summary = evaluate_file(src, tmp_path / "out", None, "random", workers=2, chunk_records=2)
    err = capsys.readouterr().err
    assert f"{src}:2: bad piece placement (skipped)" in err
    assert f"{src}:3: illegal move (move 3) (skipped)" in err
    assert f"{src}:4: needs exactly one king a side (skipped)" in err
    assert summary.complete and summary.positions == 2 and summary.bad == 3
    pgn = pgn_file(tmp_path / "g.pgn", 8)
    summary = evaluate_file(pgn, tmp_path / "pgn_out", None, "random", workers=2, chunk_records=3)
    err = capsys.readouterr().err
    assert f"{pgn}: game 6 (line " in err and summary.bad == 1 and summary.complete
    games = {json.loads(line)["game"] for p in (tmp_path / "pgn_out").glob("part-*.jsonl")
             for line in p.read_text().splitlines()}
    assert games == {1, 2, 3, 4, 5, 7, 8}


@pytest.mark.parametrize("workers", [2, 3])
def test_chunks_read_in_sub_ranges_give_the_same_parts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], workers: int
) -> None:
    """Every PGN chunk read as sub-ranges of its games by several workers at once (parts of one
    game: the most splitting there can be) writes the same parts and records, byte for byte, as
    each chunk read whole by one worker; the illegal game 6, inside a sub-range, is reported with
    its game and line and skipped."""
    src = pgn_file(tmp_path / "g.pgn", 24)
    out: dict[str, Path] = {}
    for mode, part_games in (("whole", 1 << 30), ("split", 1)):
        monkeypatch.setattr(J, "PART_GAMES", part_games)
        monkeypatch.setattr(J, "FIRST_PART_GAMES", part_games)
        out[mode] = tmp_path / mode
        summary = evaluate_file(src, out[mode], None, "random", chunk_records=7, workers=workers, top=0)
        err = capsys.readouterr().err
        assert summary.complete and summary.chunks == 4 and summary.bad == 1
        assert f"{src}: game 6 (line 21): illegal san" in err, err
    assert parts(out["split"]) == parts(out["whole"])
    assert sorted(p.name for p in out["split"].glob("part-*.done.json")) == [
        f"part-{k:06d}.done.json" for k in range(4)
    ]
    for k in range(4):
        name = f"part-{k:06d}.done.json"
        assert (out["split"] / name).read_bytes() == (out["whole"] / name).read_bytes()


#: ``python -m lc0py`` with every PGN chunk read as one-game sub-ranges (job.PART_GAMES = 1)
SPLIT_MAIN = (
    "import sys; from lc0py.tools.bulk import job; job.PART_GAMES = job.FIRST_PART_GAMES = 1; "
    "from lc0py.cli.main import main; sys.exit(main(sys.argv[1:]))"
)


@pytest.mark.parametrize("split", [False, True], ids=["whole", "sub-ranges"])
def test_sigkill_with_workers_then_resume(tmp_path: Path, split: bool) -> None:
    """The job and its PGN worker processes killed at once (SIGKILL to the process group, as a
    lost machine) after two chunks; the same command again finishes it: parts equal a clean run's.
    With ``sub-ranges`` every chunk is read by several workers at once (killed mid-read too)."""
    src = pgn_file(tmp_path / "g.pgn", 60)
    clean = evaluate_file(src, tmp_path / "clean", None, "random", chunk_records=3, workers=2)
    assert clean.complete and clean.chunks == 20 and clean.bad == 1
    out = tmp_path / "killed"
    start = [sys.executable, "-c", SPLIT_MAIN] if split else [sys.executable, "-m", "lc0py"]
    cmd = [*start, "bulk-eval", str(src), "-O", str(out), "-b", "random",
           "--chunk", "3", "--workers", "2", "--no-progress"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(cmd, env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while proc.poll() is None and len(list(out.glob("*.done.json"))) < 2:
        try:
            proc.wait(0.05)
        except subprocess.TimeoutExpired:
            pass
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done = len(list(out.glob("*.done.json")))
    assert done >= 2
    again = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert f"this run: {20 - done} of 20 chunks" in again.stdout
    assert parts(out) == parts(tmp_path / "clean")
    rows = [line for p in sorted(out.glob("part-*.jsonl")) for line in p.read_text().splitlines()]
    keys = [(json.loads(line)["game"], json.loads(line)["ply"]) for line in rows]
    assert len(keys) == len(set(keys)) and {g for g, _ in keys} == set(range(1, 61)) - {6}


def test_workers_do_not_import_the_parents_main_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A spawned child imports its parent's ``__main__`` file first: in a Ray actor, Ray's worker
    script (all of Ray in every reader and writer). The job's pools start theirs without it."""
    import types

    script = tmp_path / "heavy_main.py"
    marker = tmp_path / "imported"
    script.write_text(f"open({str(marker)!r}, 'w').close()\n")
    fake = types.ModuleType("__main__")
    fake.__file__ = str(script)
    monkeypatch.setitem(sys.modules, "__main__", fake)
    pool = J._spawn_pool(1, J.warm_writer)
    try:
        assert pool.submit(eval, "'lc0py.tools.bulk.writers' in __import__('sys').modules").result()
    finally:
        pool.shutdown()
    assert not marker.exists()
    assert sys.modules["__main__"] is fake  # put back
