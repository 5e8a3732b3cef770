"""``lc0py eval`` on the compiled path prints what the python-chess path printed, line for line:
fresh random positions (standard and Chess960 games, castling and en passant favoured, given as
``FEN | moves`` and as bare FENs) in JSON and as tables; bad lines keep python-chess's message."""

from __future__ import annotations

import json
from pathlib import Path

import chess
import pytest

from lc0py.api.evaluation import summarise
from lc0py.chess import encode_batch
from lc0py.chess.testing import special_move_games as random_games
from lc0py.cli.main import main
from lc0py.errors import PositionError
from lc0py.tools.eval import format_table, to_json
from lc0py.tools.positions import read_positions_file
from lc0py.weights import random_network, save_network


@pytest.fixture(scope="module")
def tiny_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("nets") / "tiny.pb.gz"
    save_network(random_network("tiny", seed=43), path)
    return path


def positions_file(path: Path) -> Path:
    lines = ["# random games: standard, Chess960, FEN | moves and bare FENs", "startpos | e2e4 e7e5"]
    for k, (start, moves) in enumerate(random_games(31, 150) + random_games(32, 80, chess960=True)):
        if k % 3 == 0:  # the end position as a bare FEN (no history)
            board = chess.Board(start, chess960=k >= 150)
            for m in moves:
                board.push_uci(m)
            lines.append(board.fen())
        else:
            lines.append(f"{start} | {' '.join(moves)}")
    lines.append("r3k2r/8/8/8/8/8/8/R3K2R w HAha - 0 1")  # Shredder castling, standard squares
    lines.append("4k3/8/8/8/2pP4/8/8/4K3 b - d3 0 1")  # en passant in the FEN
    path.write_text("\n".join(lines) + "\n")
    return path


def old_path_lines(weights: Path, file: Path, top: int | None, table: bool) -> list[str]:
    """What ``eval`` printed before the compiled path: python-chess histories, the same batches."""
    from lc0py.api.net import open_net

    specs = read_positions_file(file)
    histories = [spec.history() for spec in specs]
    out = []
    with open_net(weights, "numpy", None) as net:
        info = net.backend.info
        batch = info.recommended_batch or 256  # eval's batches (BLAS rounding depends on them)
        for start in range(0, len(histories), batch):
            part = histories[start:start + batch]
            encoded = [h.encode(info.input_format) for h in part]
            raw = net.backend.evaluate(encode_batch(encoded))
            for i, (h, e) in enumerate(zip(part, encoded, strict=True)):
                ev = summarise(h.board, e.transform, raw.policy[i], raw.wdl[i], float(raw.moves_left[i]))
                n = start + i + 1
                spec = specs[n - 1]
                if table:
                    out.append(format_table(spec, ev, n, top or 10) + ("\n" if n < len(specs) else ""))
                else:
                    out.append(json.dumps(to_json(spec, ev, top)))
    return out


@pytest.mark.parametrize("top", [None, "3"])
def test_json_lines_equal_the_python_chess_path(tiny_path: Path, tmp_path: Path, top: str | None,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    file = positions_file(tmp_path / "positions.txt")
    argv = ["eval", "-w", str(tiny_path), "-b", "numpy", "--positions", str(file), "--json"]
    assert main(argv + (["--top", top] if top else [])) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == old_path_lines(tiny_path, file, int(top) if top else None, table=False)
    assert len(lines) > 230


def test_tables_equal_the_python_chess_path(tiny_path: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    file = positions_file(tmp_path / "positions.txt")
    assert main(["eval", "-w", str(tiny_path), "-b", "numpy", "--positions", str(file), "--top", "4"]) == 0
    out = capsys.readouterr().out
    assert out == "\n".join(old_path_lines(tiny_path, file, 4, table=True)) + "\n"


@pytest.mark.parametrize("line", [
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1 | e2e5",  # illegal move
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1 | e2e4 e7e5 E1E2",  # not UCI
    "4k3/8/8/8/8/8/4R3/4K3 w - - 0 1",  # the side not to move in check
    "8/8/8/8/8/8/8/4K3 w - - 0 1",  # no black king
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - hmvc 1",  # python-chess refuses
])
def test_bad_lines_keep_python_chess_message(tiny_path: Path, tmp_path: Path, line: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    file = tmp_path / "bad.txt"
    file.write_text(f"startpos\n{line}\n")
    with pytest.raises(PositionError) as expected:
        read_positions_file(file)[1].history()
    assert main(["eval", "-w", str(tiny_path), "-b", "numpy", "--positions", str(file)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(str(expected.value)) and f"{file}:2" in err


def test_json_number_is_json_dumps_of_the_rounded_value() -> None:
    import random

    from lc0py.tools.eval import _round, json_number

    rng = random.Random(5)
    values = [0.0, -0.0, 1.0, 0.5, 1e-4, 9.999995e-5, 0.99999951, 123456.7, 999999.6, 1234567.0, 3e16]
    values += [rng.random() * 10 ** rng.uniform(-12, 3) * rng.choice((1, -1)) for _ in range(20000)]
    for x in values:
        assert json_number(x) == json.dumps(_round(x)), x


@pytest.mark.parametrize("probs", [[1.0], [0.9999996, 4e-7], [0.6, 0.4, 0.0], [0.5, 0.25, 1.2e-5, 3e-9]])
def test_json_line_is_json_dumps_of_json_object(probs: list[float]) -> None:
    from lc0py.tools.eval import json_line, json_object
    from lc0py.tools.positions import PositionSpec

    spec = PositionSpec(chess.STARTING_FEN, ["e2e4"], "x")
    policy = [(f"a{k}b{k}", p) for k, p in enumerate(probs)]
    for top in (None, 1):
        for mlh in (None, 12.5):
            obj = json_object(spec, policy, (0.25, 0.5, 0.25), mlh, top)
            assert json_line(spec, policy, (0.25, 0.5, 0.25), mlh, top) == json.dumps(obj)
