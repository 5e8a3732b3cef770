"""One chunk's results as a part file: JSON lines or Parquet, written atomically.

Columns (JSONL keys), one row per position:

* the key: ``line`` (FEN/EPD lists: the 1-based input line), ``game`` + ``ply`` (PGN: the 1-based
  game, the ply from its start position, 0 = before the first move) or ``row`` (Parquet: 0-based);
* ``policy``: the legal moves' probabilities (softmax at temperature 1 over the raw logits, as
  ``lc0py eval``), most likely first, the ``top`` best or all; JSONL ``{"e2e4": p, ...}``,
  Parquet two list columns ``moves`` and ``probs``;
* ``wdl`` ``[w, d, l]``, ``q`` = w - l, ``mlh`` (moves left; null without that head),
  ``legal`` (the number of legal moves);
* ``probes`` (with ``--probe-layers``): per probed layer, the mean over the 64 squares of the
  residual stream after that layer (``Net.trace``), ``[[...], ...]``.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from lc0py.chess.core.uci import UCI_NAMES
from lc0py.storage.atomic import write_atomically

_UCI = UCI_NAMES


@dataclass
class ResultBlock:
    """One chunk's results, row by row (``ply`` is ``None`` for non-game inputs)."""

    key_name: str  # "line", "game" or "row"
    key: np.ndarray  # int64
    ply: np.ndarray | None
    moves: np.ndarray  # [N, K] int32 display codes, -1 padding
    probs: np.ndarray  # [N, K] float32
    legal: np.ndarray  # [N] int
    wdl: np.ndarray  # [N, 3] float32
    mlh: np.ndarray | None  # [N] float32
    probes: list[list[list[float]]] | None = None

    def __len__(self) -> int:
        return int(len(self.key))

    def rows(self, start: int, stop: int) -> ResultBlock:
        """Rows ``start`` .. ``stop - 1`` (views: pickled, only those rows travel)."""
        cut = slice(start, stop)
        return ResultBlock(
            self.key_name,
            self.key[cut],
            None if self.ply is None else self.ply[cut],
            self.moves[cut],
            self.probs[cut],
            self.legal[cut],
            self.wdl[cut],
            None if self.mlh is None else self.mlh[cut],
            None if self.probes is None else self.probes[cut],
        )


def _g(x: float) -> str:
    text = f"{x:.6g}"
    return text if text not in ("nan", "inf", "-inf") else "null"


def jsonl_text(block: ResultBlock) -> str:
    """The block as JSON lines (hand-formatted: this runs for every position of a job)."""
    uci = _UCI
    out = []
    key = block.key.tolist()
    ply = block.ply.tolist() if block.ply is not None else None
    moves = block.moves.tolist()
    probs = block.probs.tolist()
    legal = block.legal.tolist()
    wdl = block.wdl.tolist()
    mlh = block.mlh.tolist() if block.mlh is not None else None
    name = block.key_name
    for i in range(len(key)):
        head = f'{{"{name}": {key[i]}, "ply": {ply[i]}, ' if ply is not None else f'{{"{name}": {key[i]}, '
        pol = ", ".join(f'"{uci[m]}": {_g(p)}' for m, p in zip(moves[i], probs[i], strict=True) if m >= 0)
        w, d, l = wdl[i]
        tail = f'"mlh": {_g(mlh[i])}' if mlh is not None else '"mlh": null'
        line = (
            f'{head}"policy": {{{pol}}}, "wdl": [{_g(w)}, {_g(d)}, {_g(l)}], "q": {_g(w - l)}, '
            f'{tail}, "legal": {legal[i]}'
        )
        if block.probes is not None:
            line += ', "probes": ' + json.dumps(block.probes[i])
        out.append(line + "}\n")
    return "".join(out)


def parquet_bytes(block: ResultBlock) -> bytes:
    """The block as one Parquet file (pyarrow)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = len(block)
    valid = block.moves >= 0
    counts = valid.sum(axis=1)
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(counts, out=offsets[1:])
    flat_codes = block.moves[valid]
    uci = np.array(_UCI, dtype=object)
    moves = pa.ListArray.from_arrays(pa.array(offsets), pa.array(uci[flat_codes].tolist(), pa.string()))
    probs = pa.ListArray.from_arrays(pa.array(offsets), pa.array(block.probs[valid].astype(np.float32)))
    wdl = pa.FixedSizeListArray.from_arrays(pa.array(block.wdl.astype(np.float32).reshape(-1)), 3)
    columns = {block.key_name: pa.array(block.key.astype(np.int64))}
    if block.ply is not None:
        columns["ply"] = pa.array(block.ply.astype(np.int32))
    columns.update(
        moves=moves,
        probs=probs,
        wdl=wdl,
        q=pa.array((block.wdl[:, 0] - block.wdl[:, 2]).astype(np.float32)),
        mlh=pa.array(block.mlh.astype(np.float32)) if block.mlh is not None else pa.nulls(n, pa.float32()),
        legal=pa.array(block.legal.astype(np.int16)),
    )
    if block.probes is not None:
        columns["probes"] = pa.array(block.probes, pa.list_(pa.list_(pa.float32())))
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table(columns), sink, compression="zstd")
    return bytes(sink.getvalue().to_pybytes())


def write_jsonl_pieces(
    part: Path, record_path: Path, pool: Any, block: ResultBlock, record_json: str, pieces: int
) -> float:
    """``write_part_and_record`` of a JSONL part with its rows formatted in ``pieces`` slices
    by the writer processes of ``pool`` at once (each row's line depends on that row alone: the
    same bytes as one ``jsonl_text``), joined and written here. For the job's last parts, which
    nothing else overlaps: one writer formatting a whole part (~0.3 s for 22,800 rows) was the
    job's tail. Returns the seconds it took."""
    t0 = time.perf_counter()
    n = len(block)
    cuts = [n * k // pieces for k in range(pieces + 1)]
    texts = [pool.submit(jsonl_text, block.rows(a, b)) for a, b in zip(cuts, cuts[1:], strict=False) if b > a]
    write_atomically(part, "".join(t.result() for t in texts), what=f"output part {part}")
    write_atomically(record_path, record_json, what=f"output record {record_path}")
    return time.perf_counter() - t0


def write_part(path: Path, block: ResultBlock, fmt: str) -> None:
    data: bytes | str = parquet_bytes(block) if fmt == "parquet" else jsonl_text(block)
    write_atomically(path, data, what=f"output part {path}")


def write_part_and_record(
    part: Path, record_path: Path, block: ResultBlock, record_json: str, fmt: str
) -> float:
    """The part, then its record (both atomic): the record says the part is complete. Runs in
    the job's writer processes (formatting JSON is the job's one pure-Python step per position),
    so this module imports nothing heavy. Returns the seconds it took (the job's profile)."""
    t0 = time.perf_counter()
    write_part(part, block, fmt)
    write_atomically(record_path, record_json, what=f"output record {record_path}")
    return time.perf_counter() - t0


def warm_writer() -> None:
    """A writer process's first task: nothing (unpickling it imports this module, numpy and the
    move names, before the first part comes)."""


def count_rows(path: Path, fmt: str) -> int:
    """Rows in a written part (the final check reads them back, not the records of them)."""
    if fmt == "parquet":
        import pyarrow.parquet as pq

        return int(pq.ParquetFile(str(path)).metadata.num_rows)
    with open(path, "rb") as f:
        return sum(block.count(b"\n") for block in iter(lambda: f.read(1 << 20), b""))
