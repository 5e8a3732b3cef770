"""``evaluate_file`` / ``lc0py bulk-eval``: results equal ``lc0py eval``'s, bad records skipped
with their location, resume after a kill without loss or duplicates, PGN plies, Parquet."""

from __future__ import annotations

import json
import random
from pathlib import Path

import chess
import pytest

from lc0py.api import load
from lc0py.chess.testing import random_moves
from lc0py.cli.main import main
from lc0py.errors import UsageError
from lc0py.tools.bulk import evaluate_file
from lc0py.tools.bulk import job as J
from lc0py.tools.eval import to_json
from lc0py.tools.positions import parse_position_line

ROOT = Path(__file__).resolve().parents[3]
TINY = str(ROOT / "weights" / "tiny-seed1.pb.gz")


def _lines(n: int, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        board = chess.Board()
        random_moves(board, rng.randint(1, 60), rng)
        root = chess.Board()
        moves = [m.uci() for m in board.move_stack]
        k = rng.randint(0, len(moves))
        for u in moves[:k]:
            root.push_uci(u)
        out.append(f"{root.fen()} | {' '.join(moves[k:])}" if rng.random() < 0.5 else board.fen())
    return out


def _rows(out: Path) -> list[dict]:  # type: ignore[type-arg]
    rows = []
    for part in sorted(out.glob("part-*.jsonl")):
        rows += [json.loads(line) for line in part.read_text().splitlines()]
    return rows


def test_results_equal_eval_json(tmp_path: Path) -> None:
    lines = _lines(40)
    src = tmp_path / "positions.txt"
    src.write_text("\n".join(lines) + "\n")
    summary = evaluate_file(src, tmp_path / "out", TINY, "numpy", top=5, chunk_records=16)
    assert summary.complete and summary.positions == 40 and summary.chunks == 3
    rows = _rows(tmp_path / "out")
    assert [r["line"] for r in rows] == list(range(1, 41))
    specs = [parse_position_line(line, f"x:{i}") for i, line in enumerate(lines)]
    with load(TINY, "numpy") as net:
        evals = list(net.iter_evaluate([s.history() for s in specs if s is not None]))
    for row, spec, ev in zip(rows, specs, evals, strict=True):
        assert spec is not None
        ref = to_json(spec, ev, 5)
        assert list(row["policy"]) == list(ref["policy"])
        for move, p in ref["policy"].items():
            assert row["policy"][move] == pytest.approx(p, rel=1e-4, abs=1e-6)
        assert row["wdl"] == pytest.approx(ref["wdl"], rel=1e-4, abs=1e-6)
        assert row["q"] == pytest.approx(ref["q"], rel=1e-4, abs=1e-5)
        assert row["mlh"] == pytest.approx(ref["mlh"], rel=1e-4, abs=1e-4)
        assert row["legal"] == len(list(spec.history().board.legal_moves))


def test_bad_records_skipped_with_location(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "mixed.epd"
    src.write_text(
        "# header\n\nstartpos\nnot a fen\nstartpos | e2e4 e7e5 e1e3\n"
        'rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - hmvc 0; id "e4";\n'
    )
    summary = evaluate_file(src, tmp_path / "out", None, "random", top=3)
    err = capsys.readouterr().err
    assert f"{src}:4: bad piece placement (skipped)" in err
    assert f"{src}:5: illegal move (move 3) (skipped)" in err
    assert summary.complete and summary.positions == 2 and summary.bad == 2 and summary.skipped == 2
    assert [r["line"] for r in _rows(tmp_path / "out")] == [3, 6]
    record = json.loads((tmp_path / "out" / "part-000000.done.json").read_text())
    assert [b["where"] for b in record["bad"]] == [f"{src}:4", f"{src}:5"]


def test_resume_after_a_kill_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    src = tmp_path / "p.fen"
    src.write_text("\n".join(_lines(100, 3)) + "\n")
    clean = evaluate_file(src, tmp_path / "clean", None, "random", chunk_records=10)
    assert clean.complete and clean.chunks == 10

    settings = J.make_settings(src, None, "jsonl", 10, 10, "fen_only", (), None, "random")
    plan = J.prepare_job(src, tmp_path / "killed", settings)
    seen: list[int] = []

    def kill(record: J.ChunkRecord) -> None:
        seen.append(record.chunk)
        if len(seen) == 4:
            raise KeyboardInterrupt  # as Ctrl-C, or a kill between two chunks

    with load(None, "random") as net, pytest.raises(KeyboardInterrupt):
        J.run_local(plan, net.backend, on_chunk=kill)
    done = sorted(int(p.name[5:11]) for p in (tmp_path / "killed").glob("part-*.done.json"))
    assert 3 <= len(done) <= 4 and len(done) < 10
    # a part killed while written has no record: the rerun writes it again
    (tmp_path / "killed" / "part-000009.jsonl").write_text('{"line": 1}\n{"half')
    again = evaluate_file(src, tmp_path / "killed", None, "random", chunk_records=10)
    assert again.complete and again.chunks_run == 10 - len(done) and again.positions == 100
    for part in sorted((tmp_path / "clean").glob("part-*.jsonl")):
        assert (tmp_path / "killed" / part.name).read_bytes() == part.read_bytes()
    keys = [r["line"] for r in _rows(tmp_path / "killed")]
    assert keys == list(range(1, 101))
    rerun = evaluate_file(src, tmp_path / "killed", None, "random", chunk_records=10)
    assert rerun.chunks_run == 0 and rerun.positions == 100


def test_another_job_in_the_folder_is_refused(tmp_path: Path) -> None:
    src = tmp_path / "p.fen"
    src.write_text("startpos\n")
    evaluate_file(src, tmp_path / "out", None, "random", top=3)
    with pytest.raises(UsageError, match="holds another job"):
        evaluate_file(src, tmp_path / "out", None, "random", top=4)
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    with pytest.raises(UsageError, match="not empty and holds no manifest.json"):
        evaluate_file(src, tmp_path / "busy", None, "random")
    assert (tmp_path / "busy" / "notes.txt").read_text() == "mine"


PGN = """[Event "one"]
[Site "?"]

1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 1-0

[Event "two"]
[FEN "4k3/8/8/8/8/8/4P3/4K3 w - - 0 1"]
[SetUp "1"]

1. e4 Kd7 2. e5 *

[Event "bad"]

1. e4 e5 2. Ke3 *

1. d4 d5 *
"""


def test_pgn_every_ply_keyed_by_game_and_ply(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "games.pgn"
    src.write_text(PGN)
    summary = evaluate_file(src, tmp_path / "out", None, "random", top=2, chunk_records=2, workers=1)
    assert summary.complete and summary.records == 4 and summary.bad == 1
    rows = _rows(tmp_path / "out")
    keys = [(r["game"], r["ply"]) for r in rows]
    assert keys == [(1, p) for p in range(7)] + [(2, p) for p in range(4)] + [(4, p) for p in range(3)]
    assert summary.positions == 14
    assert f"{src}: game 3 (line 12):" in capsys.readouterr().err
    # game 2 starts from its FEN: ply 0 has 4 king moves + e3 + e4
    assert next(r for r in rows if r["game"] == 2 and r["ply"] == 0)["legal"] == 6


def test_parquet_input_and_output(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    lines = _lines(30, 5)
    fens = [line.split("|")[0].strip() for line in lines]
    moves = [line.split("|")[1].split() if "|" in line else [] for line in lines]
    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"fen": fens, "moves": moves}), src, row_group_size=12)
    text = tmp_path / "in.txt"
    text.write_text("\n".join(lines) + "\n")
    a = evaluate_file(src, tmp_path / "a", None, "random", output_format="parquet", chunk_records=5)
    b = evaluate_file(text, tmp_path / "b", None, "random")
    assert (
        a.complete and a.positions == b.positions == 30 and a.chunks == 8
    )  # row groups 12, 12, 6: 5+5+2, 5+5+2, 5+1
    table = pa.concat_tables([pq.read_table(p) for p in sorted((tmp_path / "a").glob("part-*.parquet"))])
    assert table.column("row").to_pylist() == list(range(30))
    rows = _rows(tmp_path / "b")
    for i, row in enumerate(rows):
        got = dict(zip(table.column("moves")[i].as_py(), table.column("probs")[i].as_py(), strict=True))
        assert list(got) == list(row["policy"])
        assert table.column("wdl")[i].as_py() == pytest.approx(row["wdl"], rel=1e-5)


def test_cli_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bulk-eval", str(tmp_path / "missing.fen"), "-O", str(tmp_path / "o"), "-b", "random"]) == 2
    err = capsys.readouterr().err.strip()
    assert "missing.fen: no such file" in err and "\n" not in err
    src = tmp_path / "p.fen"
    src.write_text("startpos\n")
    assert main(["bulk-eval", str(src), "-O", str(tmp_path / "o"), "-b", "random", "--top", "-1"]) == 2
    assert main(["bulk-eval", str(src), "-O", str(tmp_path / "o"), "-b", "random", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["positions"] == 1 and summary["complete"]


def test_writer_processes_write_the_same_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Parts and records written by 2 writer processes equal those written in the job's own
    process, byte for byte, including the last parts, whose rows the writers format in pieces
    at once (``writers.write_jsonl_pieces``)."""
    from lc0py.tools.bulk import writers

    pieces: list[int] = []

    def counted(*args: object) -> float:
        pieces.append(len(args[3]))  # type: ignore[arg-type]
        return writers.write_jsonl_pieces(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(J, "write_jsonl_pieces", counted)
    src = tmp_path / "p.fen"
    src.write_text("\n".join(_lines(30, 7)) + "\n")
    a = evaluate_file(src, tmp_path / "a", None, "random", chunk_records=8, writers=0)
    b = evaluate_file(src, tmp_path / "b", None, "random", chunk_records=8, writers=2)
    assert a.complete and b.complete and a.chunks == b.chunks == 4
    assert pieces and pieces[-1] == 6  # at least the last part (6 rows) formatted in pieces
    for part in sorted((tmp_path / "a").glob("part-*")):
        assert (tmp_path / "b" / part.name).read_bytes() == part.read_bytes()


def test_probe_layers_are_the_trace_means(tmp_path: Path) -> None:
    import numpy as np

    src = tmp_path / "p.fen"
    src.write_text("startpos\n4k3/8/8/8/8/8/4P3/4K3 w - - 0 1\n")
    evaluate_file(src, tmp_path / "out", TINY, "numpy", probe_layers=(0, 1))
    rows = _rows(tmp_path / "out")
    with load(TINY, "numpy") as net:
        for row, fen in zip(rows, (chess.STARTING_FEN, "4k3/8/8/8/8/8/4P3/4K3 w - - 0 1"), strict=True):
            outputs = [v for k, v in net.trace(chess.Board(fen)).activations.items() if k.endswith(".output")]
            assert len(row["probes"]) == 2
            for layer in (0, 1):
                want = np.asarray(outputs[layer], np.float64).reshape(64, -1).mean(axis=0)
                np.testing.assert_allclose(row["probes"][layer], want, rtol=1e-5, atol=1e-6)
    with pytest.raises(UsageError, match="--probe-layers 99"):
        evaluate_file(src, tmp_path / "bad", TINY, "numpy", probe_layers=(99,))


def test_ctrl_c_says_how_to_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(J, "evaluate_file", interrupted)
    src = tmp_path / "p.fen"
    src.write_text("startpos\n")
    assert main(["bulk-eval", str(src), "-O", str(tmp_path / "o"), "-b", "random"]) == 130
    assert "run the same command again to resume" in capsys.readouterr().err


def test_a_killed_worker_process_says_how_to_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A reader or writer process killed mid-job (the OOM killer) breaks its pool: one line that
    says how to resume, status 1, no traceback (the job itself keeps every finished chunk)."""
    from concurrent.futures.process import BrokenProcessPool

    def killed(*args: object, **kwargs: object) -> None:
        raise BrokenProcessPool("A process in the process pool was terminated abruptly")

    monkeypatch.setattr(J, "evaluate_file", killed)
    src = tmp_path / "p.fen"
    src.write_text("startpos\n")
    assert main(["bulk-eval", str(src), "-O", str(tmp_path / "o"), "-b", "random"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "terminated abruptly" in err[0], err
    assert "run the same command again to resume" in err[0]
