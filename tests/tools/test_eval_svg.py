"""``lc0py eval --svg``: the picture's arrows follow the policy, the bar the WDL; it renders."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import chess
import pytest

from lc0py.cli.main import main
from lc0py.tools.board_svg import BOARD, MAX_ARROWS, arrow_width

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "weights" / "tiny-seed1.pb.gz"
NS = {"svg": "http://www.w3.org/2000/svg"}


def _eval(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict]:  # type: ignore[type-arg]
    assert main(["eval", "-w", str(TINY), "--backend", "numpy", "--json", *argv]) == 0
    captured = capsys.readouterr()
    assert "picture written" in captured.err
    return [json.loads(line) for line in captured.out.splitlines()]


def test_svg_arrows_and_wdl_bar(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "e4.svg"
    (obj,) = _eval(capsys, "--moves", "e2e4", "--svg", str(path))
    root = ET.parse(path).getroot()
    arrows = root.findall(".//svg:line[@class='move-arrow']", NS)
    assert len(arrows) == MAX_ARROWS
    top = list(obj["policy"].items())[:MAX_ARROWS]
    drawn = {a.get("data-move"): (float(a.get("data-probability", "nan")), float(a.get("stroke-width", "0")))
             for a in arrows}
    assert set(drawn) == {m for m, _ in top}
    for move, p in top:
        assert drawn[move][0] == pytest.approx(p, abs=1e-5)
        assert drawn[move][1] == pytest.approx(arrow_width(p), abs=0.01)
    widths = [drawn[m][1] for m, _ in top]
    assert widths == sorted(widths, reverse=True) and widths[0] > widths[-1]
    bar = [float(root.find(f".//svg:rect[@class='wdl-{k}']", NS).get("width", "nan"))  # type: ignore[union-attr]
           for k in ("win", "draw", "loss")]
    assert bar == pytest.approx([BOARD * x for x in obj["wdl"]], abs=0.05)
    assert root.find(".//svg:svg", NS) is not None  # the chess.svg board, nested


def test_svg_renders_to_png(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cairosvg = pytest.importorskip("cairosvg", exc_type=ImportError)
    path = tmp_path / "pos.svg"
    _eval(capsys, "--fen", "r3k2r/8/8/8/8/8/8/R3K2R b KQkq - 0 1", "--svg", str(path))
    try:
        png = cairosvg.svg2png(url=str(path))
    except OSError as exc:  # cairosvg installed without the cairo library
        pytest.skip(f"no cairo library: {exc}")
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert width == BOARD and height > BOARD


def test_several_positions_get_numbered_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    positions = tmp_path / "p.txt"
    positions.write_text("startpos\nstartpos | d2d4\n")
    _eval(capsys, "--positions", str(positions), "--svg", str(tmp_path / "out.svg"))
    assert sorted(p.name for p in tmp_path.glob("out-*.svg")) == ["out-1.svg", "out-2.svg"]


def test_svg_into_a_missing_directory_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "-w", str(TINY), "--svg", str(tmp_path / "no" / "x.svg")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--svg" in err


def _lines(svg: str) -> list[tuple[str, float, float, float, float, float]]:
    root = ET.fromstring(svg)
    keys = ("x1", "y1", "x2", "y2", "stroke-width")
    return [(a.get("data-move", ""), *(float(a.get(k, "nan")) for k in keys))  # type: ignore[misc]
            for a in root.findall(".//svg:line[@class='move-arrow']", NS)]


def test_arrows_on_one_line_are_side_by_side() -> None:
    """A rook's a1a4 and a1a8 (and the queen's a1a2) lie on one line: drawn apart, none hidden."""
    from lc0py.api.evaluation import Evaluation
    from lc0py.tools.board_svg import evaluation_svg

    board = chess.Board("4k3/8/8/8/8/8/8/R3K3 w Q - 0 1")
    moves = {"a1a4": 0.4, "a1a8": 0.3, "a1a2": 0.2, "e1f2": 0.1}
    ev = Evaluation(board.fen(), {chess.Move.from_uci(m): p for m, p in moves.items()}, (0.5, 0.3, 0.2), None)
    drawn = {m: rest for m, *rest in _lines(evaluation_svg(board, ev))}
    file_a = [drawn[m] for m in ("a1a4", "a1a8", "a1a2")]
    xs = sorted(x1 for x1, _, x2, _, _ in file_a)
    widths = {x1: w for x1, _, _, _, w in file_a}
    for a, b in zip(xs, xs[1:], strict=False):  # vertical arrows: apart by at least their half widths
        assert b - a >= (widths[a] + widths[b]) / 2
    for x1, _, x2, _, _ in file_a:
        assert x1 == pytest.approx(x2)  # still along the file
    e1f2 = drawn["e1f2"]
    assert e1f2[0] == pytest.approx(15 + 4.5 * 45)  # alone on its line: from the square's centre


def test_long_legend_wraps_inside_the_picture() -> None:
    from lc0py.tools.board_svg import BOARD, LEGEND_CHARS, wrap_legend

    text = "White to move, Q +0.123: " + "  ".join(f"exd8=Q+ {k}%" for k in range(12))
    lines = wrap_legend(text)
    assert len(lines) > 1 and all(len(line) <= LEGEND_CHARS for line in lines)
    assert " ".join(lines).split() == text.split()  # nothing lost
    assert LEGEND_CHARS * 0.6 * 12 <= BOARD
    assert wrap_legend("x" * (LEGEND_CHARS + 5)) == ["x" * LEGEND_CHARS, "x" * 5]
