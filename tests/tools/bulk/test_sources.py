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


def _pgn_with_bad_games(path: Path) -> Path:
    """12 games: with and without tags, a comment, movetext over several lines, an illegal move
    (game 5) and an unreadable one (game 9: a FEN that is none)."""
    games = []
    for k in range(12):
        if k == 4:
            games.append('[Event "bad"]\n\n1. e4 e5 2. Ke3 Qxe3 *\n')
        elif k == 8:
            games.append('[Event "bad fen"]\n[FEN "not a fen"]\n\n1. e4 *\n')
        elif k % 3 == 0:
            games.append("1. d4 d5 2. c4 {a comment} e6\n3. Nc3 *\n")
        else:
            more = "3. Bb5" if k % 2 else ""
            games.append(f'[Event "g{k + 1}"]\n[Site "?"]\n\n1. e4 e5\n2. Nf3 Nc6 {more} *\n')
    path.write_text("\n".join(games))
    return path


@pytest.mark.parametrize("parts", [1, 2, 3, 5, 7, 12])
def test_sub_ranges_joined_are_the_whole_chunks_text(tmp_path: Path, parts: int) -> None:
    """A chunk read as ``parts`` consecutive sub-ranges (several workers) and joined is the text
    one read of the chunk gives: the same lines, locations (game and line) and errors, with the
    bad games' indices counted from the chunk's first game."""
    path = _pgn_with_bad_games(tmp_path / "g.pgn")
    chunks = sources.plan_pgn(path, 6)
    assert [c.count for c in chunks] == [6, 6]
    for chunk in chunks:
        whole = sources.read_records(str(path), "pgn", chunk)
        ranges = sources.split_parts(chunk.count, parts)
        assert ranges[0][0] == 0 and ranges[-1][1] == chunk.count
        assert all(a < b for a, b in ranges)
        assert all(r[1] == s[0] for r, s in zip(ranges, ranges[1:], strict=False))
        pieces = [sources.read_records(str(path), "pgn", chunk, r) for r in ranges]
        assert sources.ChunkText.join(pieces) == whole
        assert sum(len(p.lines) for p in pieces) == chunk.count
    second = sources.read_records(str(path), "pgn", chunks[1], (2, 4))  # games 9 and 10
    assert [r for r, _ in second.errors] == [0] and second.where[0].startswith(f"{path}: game 9 (line ")
    halves = [sources.read_records(str(path), "pgn", chunks[0], r) for r in ((0, 3), (3, 6))]
    bad = sources.ChunkText.join(halves)
    assert [r for r, _ in bad.errors] == [4] and bad.where[4].startswith(f"{path}: game 5 (line ")
    assert "illegal" in bad.errors[0][1]
