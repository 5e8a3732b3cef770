"""Chunk plans: every record in exactly one chunk, byte ranges back to back, in order."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from lc0py.tools.bulk import sources


@pytest.mark.parametrize(
    "lines, per_chunk, final_newline",
    [
        (0, 3, True),
        (1, 3, False),
        (9, 3, True),
        (10, 3, False),
        (10, 3, True),
        (1000, 7, True),
        (5, 100, False),
    ],
)
def test_line_chunks_cover_every_line_once(
    tmp_path: Path, lines: int, per_chunk: int, final_newline: bool
) -> None:
    rng = random.Random(lines)
    text = "\n".join("x" * rng.randint(0, 30) for _ in range(lines)) + (
        "\n" if final_newline and lines else ""
    )
    path = tmp_path / "f.txt"
    path.write_bytes(text.encode())
    chunks = sources.plan_lines(path, per_chunk)
    assert sum(c.count for c in chunks) == lines
    assert [c.first for c in chunks] == [sum(c.count for c in chunks[:k]) for k in range(len(chunks))]
    data = path.read_bytes()
    assert b"".join(data[c.start : c.stop] for c in chunks) == data
    for c in chunks:
        body = data[c.start : c.stop]
        assert body.count(b"\n") + (0 if body.endswith(b"\n") else 1) == c.count


def test_small_blocks_find_the_same_boundaries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "f.txt"
    path.write_text("".join(f"line {k}\n" for k in range(500)))
    whole = sources.plan_lines(path, 33)
    monkeypatch.setattr(sources, "_BLOCK", 17)  # boundaries across many reads
    assert sources.plan_lines(path, 33) == whole


def test_pgn_games_with_and_without_tags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pgn = (
        '[Event "a"]\n[Site "?"]\n\n1. e4 e5\n2. Nf3 *\n\n1. d4 d5 *\n\n'
        '[Event "c"]\n\n{a comment}\n1. c4 *\n\n'
        '[Event "d"]\n[FEN "8/8/8/8/8/8/8/K6k w - - 0 1"]\n\n1. Kb1 *\n'
    )
    path = tmp_path / "g.pgn"
    path.write_text(pgn)
    for block in (1 << 24, 11):  # whole file, and block boundaries inside lines and games
        monkeypatch.setattr(sources, "_BLOCK", block)
        chunks = sources.plan_pgn(path, 2)
        assert [(c.first, c.count) for c in chunks] == [(0, 2), (2, 2)]
        assert [c.line for c in chunks] == [1, 9]
        data = path.read_bytes()
        games = [data[c.start : c.stop] for c in chunks]
        assert games[0].startswith(b'[Event "a"]') and b"1. d4 d5" in games[0]
        assert games[1].startswith(b'[Event "c"]') and games[1].endswith(b"1. Kb1 *\n")
    lines, errors, where = sources.pgn_games_as_lines(data, 1)
    assert errors == [None] * 4 and where == [1, 7, 9, 14]
    assert lines[1].endswith("| d2d4 d7d5") and lines[3] == "8/8/8/8/8/8/8/K6k w - - 0 1 | a1b1"
