"""Inputs of the bulk evaluator: FEN/EPD/positions lists, PGN and Parquet, cut into chunks.

A job's input is planned once into **chunks** (``Chunk``): contiguous byte ranges holding a fixed
number of records (lines, or games for PGN), or row ranges of a Parquet file. A chunk is the unit
of work, of output (one part file each) and of resumption, and the same plan serves the local
run and the Ray shards, so both write the same parts. Planning reads the file once, in blocks,
without parsing it: memory stays bounded whatever the input size.

Records are handed to the compiled encoder as text lines: a FEN/EPD/positions line as it is, a
PGN game as ``FEN | uci uci ...`` (python-chess reads the movetext, in worker processes), a
Parquet row as ``fen | moves`` from its ``fen`` (and optional ``moves``) column.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from lc0py.errors import UsageError
from lc0py.storage.reading import open_regular_file

KINDS = ("fen", "pgn", "parquet")
_BLOCK = 1 << 24


@dataclass(frozen=True)
class Chunk:
    """Records ``first`` .. ``first + count - 1`` (0-based) of the input, at bytes (or Parquet
    rows) ``start`` .. ``stop``; ``line``: the 1-based line at ``start`` (PGN, for messages)."""

    index: int
    start: int
    stop: int
    first: int
    count: int
    line: int = 0

    def to_list(self) -> list[int]:
        return [self.index, self.start, self.stop, self.first, self.count, self.line]

    @classmethod
    def from_list(cls, row: list[int]) -> Chunk:
        return cls(*(int(x) for x in row))


def input_kind(path: str | os.PathLike[str], given: str | None = None) -> str:
    """``fen`` (FEN, EPD and positions lists), ``pgn`` or ``parquet``: ``given``, else from the suffix."""
    if given:
        if given not in KINDS:
            raise UsageError(f"--input-format {given}: not one of {', '.join(KINDS)}")
        return given
    suffix = Path(path).suffix.lower()
    if suffix == ".pgn":
        return "pgn"
    if suffix in (".parquet", ".pq"):
        return "parquet"
    return "fen"


def _open(path: str | Path) -> io.BufferedReader:
    return open_regular_file(str(path), "file", UsageError, label=f"input {path}")  # type: ignore[return-value]


def plan_lines(path: str | Path, per_chunk: int) -> list[Chunk]:
    """Chunks of ``per_chunk`` lines each."""
    chunks: list[Chunk] = []
    start = offset = lines = 0
    in_chunk = 0
    with _open(path) as f:
        while True:
            block = f.read(_BLOCK)
            if not block:
                break
            pos = 0
            while True:
                want = per_chunk - in_chunk
                # find the want-th newline from pos, or run out of block
                found = pos - 1
                for _ in range(want):
                    found = block.find(b"\n", found + 1)
                    if found < 0:
                        break
                if found < 0:
                    in_chunk += block.count(b"\n", pos)
                    break
                stop = offset + found + 1
                chunks.append(Chunk(len(chunks), start, stop, lines, per_chunk))
                lines += per_chunk
                start = stop
                in_chunk = 0
                pos = found + 1
            offset += len(block)
        if offset > start:  # the last lines (the last may lack its newline)
            f.seek(start)
            tail = f.read(offset - start)
            count = tail.count(b"\n") + (0 if tail.endswith(b"\n") else 1)
            chunks.append(Chunk(len(chunks), start, offset, lines, count))
    return chunks


class PgnScanner:
    """Finds where games start, a line at a time: a tag line (``[``) after movetext or a blank
    line, or movetext after a blank line (a game without tags). Fed whole lines, block by block."""

    def __init__(self) -> None:
        self.in_tags = False
        self.after_blank = True
        self.starts: list[int] = []
        self.lines: list[int] = []  # the 1-based line of each start
        self.line = 0

    def feed(self, data: bytes, base: int) -> None:
        pos = 0
        n = len(data)
        while pos < n:
            end = data.find(b"\n", pos)
            end = n if end < 0 else end
            line = data[pos:end].strip()
            self.line += 1
            if line.startswith(b"["):
                if not self.in_tags:
                    self.starts.append(base + pos)
                    self.lines.append(self.line)
                    self.in_tags = True
            elif line and not line.startswith((b"%", b";")):
                if not self.in_tags and self.after_blank:
                    self.starts.append(base + pos)
                    self.lines.append(self.line)
                self.in_tags = False
                self.after_blank = False
            elif not line and not self.in_tags:
                self.after_blank = True
            pos = end + 1


def plan_pgn(path: str | Path, per_chunk: int) -> list[Chunk]:
    """Chunks of ``per_chunk`` games each (the file is read once, game boundaries only)."""
    scanner = PgnScanner()
    with _open(path) as f:
        size = os.fstat(f.fileno()).st_size
        offset = 0
        carry = b""
        while True:
            block = f.read(_BLOCK)
            if not block:
                break
            data = carry + block
            cut = data.rfind(b"\n") + 1
            scanner.feed(data[:cut], offset)
            offset += cut
            carry = data[cut:]
        if carry:
            scanner.feed(carry, offset)
    starts = scanner.starts
    chunks: list[Chunk] = []
    for k in range(0, len(starts), per_chunk):
        group = starts[k : k + per_chunk]
        stop = starts[k + per_chunk] if k + per_chunk < len(starts) else size
        chunks.append(Chunk(len(chunks), group[0], stop, k, len(group), scanner.lines[k]))
    return chunks


def plan_parquet(path: str | Path, per_chunk: int) -> list[Chunk]:
    """Chunks of at most ``per_chunk`` rows, never across a row group."""
    pq = _pyarrow_parquet()
    try:
        meta = pq.ParquetFile(str(path)).metadata
    except Exception as exc:
        raise UsageError(f"input {path}: not a readable Parquet file ({exc})") from None
    chunks: list[Chunk] = []
    row = 0
    for g in range(meta.num_row_groups):
        rows = meta.row_group(g).num_rows
        for k in range(0, rows, per_chunk):
            count = min(per_chunk, rows - k)
            chunks.append(Chunk(len(chunks), row + k, row + k + count, row + k, count))
        row += rows
    return chunks


def _pyarrow_parquet():  # type: ignore[no-untyped-def]
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise UsageError('Parquet needs pyarrow: pip install "lc0py[parquet]"') from None
    return pq


def plan(path: str | Path, kind: str, per_chunk: int) -> list[Chunk]:
    _open(path).close()  # a missing file, a directory or a FIFO: one line, before anything else
    if kind == "pgn":
        return plan_pgn(path, per_chunk)
    if kind == "parquet":
        return plan_parquet(path, per_chunk)
    return plan_lines(path, per_chunk)


def read_bytes(path: str | Path, chunk: Chunk) -> bytes:
    with _open(path) as f:
        f.seek(chunk.start)
        return f.read(chunk.stop - chunk.start)


def pgn_games_as_lines(
    data: bytes, first_line: int, part: tuple[int, int] | None = None
) -> tuple[list[str], list[str | None], list[int]]:
    """Every game of ``data`` as ``FEN | uci ...`` (python-chess reads the movetext), its error
    (``None`` if it is fine) and the line it starts on (``first_line`` = the chunk's first).
    ``part`` ``(a, b)``: games ``a`` .. ``b - 1`` of ``data`` only (the game boundaries of the
    whole of ``data`` are found first: a tiny cost next to python-chess's reading)."""
    import logging

    import chess.pgn

    logging.getLogger("chess.pgn").setLevel(logging.CRITICAL)  # its errors are reported here, once
    scanner = PgnScanner()
    scanner.feed(data, 0)
    starts = scanner.starts
    lines: list[str] = []
    errors: list[str | None] = []
    where: list[int] = []
    text_line = first_line
    previous = 0
    first, last = part if part is not None else (0, len(starts))
    for k in range(first, min(last, len(starts))):
        start = starts[k]
        stop = starts[k + 1] if k + 1 < len(starts) else len(data)
        text_line += data.count(b"\n", previous, start)
        previous = start
        where.append(text_line)
        try:
            game = chess.pgn.read_game(io.StringIO(data[start:stop].decode("utf-8", "replace")))
        except Exception as exc:  # python-chess raises on some malformed input
            lines.append("")
            errors.append(f"unreadable game ({exc})")
            continue
        if game is None:
            lines.append("")
            errors.append("no game")
            continue
        if game.errors:
            lines.append("")
            errors.append(str(game.errors[0]).splitlines()[0])
            continue
        board = game.board()
        moves = [m.uci() for m in game.mainline_moves()]
        lines.append(f"{board.fen()} | {' '.join(moves)}")
        errors.append(None)
    return lines, errors, where


def parquet_rows_as_lines(path: str | Path, chunk: Chunk) -> list[str]:
    """Rows ``chunk.start`` .. ``chunk.stop`` as ``fen | moves`` lines (``fen`` column needed;
    ``moves``: optional, a space-separated string or a list of UCI moves)."""
    pq = _pyarrow_parquet()
    pf = pq.ParquetFile(str(path))
    names = pf.schema_arrow.names
    if "fen" not in names:
        raise UsageError(f"input {path}: no 'fen' column (columns: {', '.join(names)})")
    first = 0
    for g in range(pf.metadata.num_row_groups):  # the row group holding the chunk
        rows = pf.metadata.row_group(g).num_rows
        if first <= chunk.start < first + rows:
            break
        first += rows
    table = pf.read_row_group(g, columns=[c for c in ("fen", "moves") if c in names])
    part = table.slice(chunk.start - first, chunk.stop - chunk.start)
    fens = part.column("fen").to_pylist()
    moves = part.column("moves").to_pylist() if "moves" in part.column_names else [None] * len(fens)
    out = []
    for fen, mv in zip(fens, moves, strict=True):
        text = " ".join(mv) if isinstance(mv, list) else (mv or "")
        out.append(
            f"{(fen or '').replace('|', ' ').strip()} | {text}" if text else (fen or "").replace("\n", " ")
        )
    return out


@dataclass
class ChunkText:
    """A PGN or Parquet chunk as text lines for the compiled encoder (``FEN | uci ...``), the
    location of each record, and the records found bad while reading (index, error)."""

    lines: list[str]
    where: list[str]
    errors: list[tuple[int, str]]

    @classmethod
    def join(cls, parts: list[ChunkText]) -> ChunkText:
        """Consecutive sub-ranges of one chunk (``read_records(..., part=)``) as the whole chunk's
        text: the same lines, locations and errors (indices counted from the chunk's first
        record) as one ``read_records`` of the chunk gives."""
        if len(parts) == 1:
            return parts[0]
        lines: list[str] = []
        where: list[str] = []
        errors: list[tuple[int, str]] = []
        for p in parts:
            errors.extend((len(lines) + r, err) for r, err in p.errors)
            lines.extend(p.lines)
            where.extend(p.where)
        return cls(lines, where, errors)


def read_records(path: str, kind: str, chunk: Chunk, part: tuple[int, int] | None = None) -> ChunkText:
    """The records of a PGN or Parquet chunk as text: what ``bulk-eval --workers`` processes do
    (python-chess reads PGN movetext at ~50,000 positions a second a core; this module imports
    neither numba nor the encoder, so the workers start light). ``part`` ``(a, b)``: the
    chunk's records ``a`` .. ``b - 1`` only (``ChunkText.join`` of a chunk's consecutive parts is
    the whole chunk's text), so several workers can read one chunk."""
    a, b = part if part is not None else (0, chunk.count)
    if b >= chunk.count:  # the last part: every record to the chunk's end, as a whole read
        b = chunk.count if kind == "parquet" else 1 << 62
    if kind == "parquet":
        lines = parquet_rows_as_lines(path, chunk)[a:b]
        return ChunkText(lines, [f"{path}: row {chunk.first + a + r}" for r in range(len(lines))], [])
    games, errors, lines_at = pgn_games_as_lines(read_bytes(path, chunk), chunk.line or 1, (a, b))
    where = [f"{path}: game {chunk.first + a + g + 1} (line {lines_at[g]})" for g in range(len(games))]
    return ChunkText(games, where, [(g, err) for g, err in enumerate(errors) if err is not None])


def split_parts(count: int, parts: int) -> list[tuple[int, int]]:
    """``count`` records as ``parts`` consecutive near-equal ``(a, b)`` ranges (none empty)."""
    parts = max(1, min(parts, count))
    return [(count * k // parts, count * (k + 1) // parts) for k in range(parts)]


def warm_reader(kind: str) -> None:
    """What a worker process imports before its first chunk, done at once (python-chess's PGN
    reader, pyarrow)."""
    if kind == "pgn":
        import chess.pgn  # noqa: F401
    elif kind == "parquet":
        _pyarrow_parquet()


def iter_chunks(chunks: list[Chunk], done: set[int]) -> Iterator[Chunk]:
    for chunk in chunks:
        if chunk.index not in done:
            yield chunk


def timed_read_records(
    path: str, kind: str, chunk: Chunk, part: tuple[int, int] | None = None
) -> tuple[ChunkText, float]:
    """``read_records`` and the seconds it took (in a worker process: the job's profile)."""
    import time

    t0 = time.perf_counter()
    text = read_records(path, kind, chunk, part)
    return text, time.perf_counter() - t0
