"""eval's inputs (issue 9 item 6): chunked evaluation of long --positions files, positions where the
side not to move is in check, a BOM, directories and FIFOs named as such."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import chess
import pytest

from lc0py.cli.main import main
from lc0py.tools import eval as eval_tool
from lc0py.weights import random_network, save_network

ILLEGAL_FEN = "4k3/8/8/8/8/8/4R3/4K3 w - - 0 1"  # black (not to move) is in check from e2


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("eval") / "tiny.pb.gz"
    save_network(random_network("tiny", seed=5, layers=1), path)
    return path


def _error(capsys: pytest.CaptureFixture[str], rc: int) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and "Traceback" not in captured.err, captured.err
    return lines[0]


def test_long_positions_file_is_evaluated_in_bounded_chunks(
    tiny: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``eval`` evaluates through ``lc0py.load(...).iter_evaluate``: batches of a bounded size."""
    import lc0py

    net = lc0py.load(tiny, "numpy")
    sizes: list[int] = []
    evaluate = net.backend.evaluate
    monkeypatch.setattr(net.backend, "evaluate", lambda batch: sizes.append(len(batch)) or evaluate(batch))
    boards = []
    for i in range(23):
        board = chess.Board()
        if i % 2:
            board.push_uci("e2e4")
        boards.append(board)
    chunked = list(net.iter_evaluate(boards, batch_size=5))
    assert sizes == [5, 5, 5, 5, 3]
    whole = list(net.iter_evaluate(boards, batch_size=100))
    for x, y in zip(chunked, whole, strict=True):
        # chunking changes nothing per position but BLAS rounding (float32 batches of other sizes)
        assert {m: p for m, p in x.policy.items()} == pytest.approx(dict(y.policy), rel=1e-4, abs=1e-6)
        assert x.wdl == pytest.approx(y.wdl, rel=1e-4, abs=1e-6)


def test_eval_streams_every_position_of_a_file(tiny: Path, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(eval_tool, "CHUNK", 4)
    positions = tmp_path / "many.txt"
    positions.write_text("".join("startpos | e2e4\n" if i % 3 else "startpos\n" for i in range(10)))
    assert main(["eval", "-w", str(tiny), "--backend", "numpy", "--positions", str(positions), "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == 10 and all(abs(sum(r["policy"].values()) - 1) < 1e-4 for r in rows)


def test_side_not_to_move_in_check_is_refused(tiny: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    line = _error(capsys, main(["eval", "-w", str(tiny), "--backend", "numpy", "--fen", ILLEGAL_FEN]))
    assert "side not to move (black) is in check" in line and ILLEGAL_FEN in line
    positions = tmp_path / "p.txt"
    positions.write_text(f"startpos\n{ILLEGAL_FEN}\n")
    line = _error(capsys, main(["eval", "-w", str(tiny), "--positions", str(positions)]))
    assert f"{positions}:2" in line and "in check" in line


def test_uci_position_with_the_side_not_to_move_in_check_is_an_error() -> None:
    from lc0py.cli.main import build_parser
    from lc0py.uci.engine import run

    args = build_parser().parse_args(["uci", "--backend", "random"])
    out = io.StringIO()
    run(args, stdin=io.StringIO(f"position fen {ILLEGAL_FEN}\ngo nodes 5\nisready\nquit\n"), stdout=out)
    lines = out.getvalue().splitlines()
    assert any(line.startswith("error") and "in check" in line for line in lines), lines
    best = [line for line in lines if line.startswith("bestmove")]
    assert best and best[0] != "bestmove e2e8"  # no king capture: the position was never set


def test_bom_is_stripped(tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    positions = tmp_path / "bom.txt"
    positions.write_bytes(b"\xef\xbb\xbfstartpos | e2e4\n")
    assert main(["eval", "-w", str(tiny), "--backend", "numpy", "--positions", str(positions), "--json"]) == 0
    (row,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert row["moves"] == ["e2e4"]


def test_directories_and_fifos_are_named(tiny: Path, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert "is a FIFO" in _error(capsys, main(["eval", "-w", str(tiny), "--positions", str(fifo)]))
    assert "is a directory" in _error(capsys, main(["eval", "-w", str(tiny), "--positions", str(tmp_path)]))
    assert "is a directory" in _error(capsys, main(["eval", "-w", str(tmp_path)]))
    assert "is a FIFO" in _error(capsys, main(["eval", "-w", str(fifo)]))
    assert "is a FIFO" in _error(capsys, main(["describenet", "-w", str(fifo)]))
    if os.path.exists("/dev/zero"):
        assert "character device" in _error(capsys, main(["eval", "-w", "/dev/zero"]))


def test_non_finite_backend_output_is_refused(tiny: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import lc0py
    from lc0py.errors import Lc0pyError

    net = lc0py.load(tiny, "numpy")
    evaluate = net.backend.evaluate

    def poisoned(batch):  # type: ignore[no-untyped-def]
        out = evaluate(batch)
        out.wdl[1, 0] = float("nan")
        return out

    monkeypatch.setattr(net.backend, "evaluate", poisoned)
    boards = [chess.Board(), chess.Board("8/8/8/8/8/8/4k3/K7 w - - 0 1"), chess.Board()]
    with pytest.raises(Lc0pyError, match="8/8/8/8/8/8/4k3/K7 w - - 0 1: backend .* non-finite WDL"):
        list(net.iter_evaluate(boards))

