"""A chunk of input records to one ``PlanesBatch`` plus where each row came from (compiled)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lc0py.chess.core import board as B
from lc0py.chess.core import records as compiled
from lc0py.chess.core.encode import fill_code
from lc0py.chess.planes import NUM_PLANES, PlanesBatch


@dataclass
class EncodedChunk:
    """Rows ready for a backend: ``planes``, the core position of each row (``pos``) and its
    canonical ``transform`` (to read the policy), ``record``/``ply`` of each row, and per record
    its ``status`` (0 ok, ``compiled.SKIPPED``, else an ``compiled.ERRORS`` code) and ``err_arg``."""

    planes: PlanesBatch
    pos: np.ndarray
    transform: np.ndarray
    record: np.ndarray
    ply: np.ndarray
    status: np.ndarray
    err_arg: np.ndarray

    def __len__(self) -> int:
        return len(self.planes)


def encode_records(
    buf: bytes,
    starts: np.ndarray,
    ends: np.ndarray,
    *,
    all_plies: bool,
    capacity: int,
    input_format: int,
    history_fill: str = "fen_only",
) -> EncodedChunk:
    """Encode the records ``buf[starts[i]:ends[i]]`` (``compiled.encode_records``); ``capacity``:
    at least the rows they give (records, or records + moves with ``all_plies``)."""
    data = np.frombuffer(buf, dtype=np.uint8)
    n = len(starts)
    masks = np.empty((capacity, NUM_PLANES), np.uint64)
    values = np.empty((capacity, NUM_PLANES), np.float32)
    pos = np.empty((capacity, B.POS_WORDS), np.uint64)
    transform = np.empty(capacity, np.int64)
    record = np.empty(capacity, np.int64)
    ply = np.empty(capacity, np.int64)
    status = np.empty(n, np.int64)
    err_arg = np.empty(n, np.int64)
    rows = compiled.encode_records(
        data,
        np.asarray(starts, np.int64),
        np.asarray(ends, np.int64),
        all_plies,
        int(input_format),
        fill_code(history_fill),
        masks,
        values,
        pos,
        transform,
        record,
        ply,
        status,
        err_arg,
    )
    return EncodedChunk(
        PlanesBatch(masks[:rows], values[:rows]),
        pos[:rows],
        transform[:rows],
        record[:rows],
        ply[:rows],
        status,
        err_arg,
    )


def line_spans(buf: bytes) -> tuple[np.ndarray, np.ndarray]:
    """(starts, ends) of every line of ``buf`` (the newline excluded)."""
    data = np.frombuffer(buf, dtype=np.uint8)
    newlines = np.flatnonzero(data == 10)
    starts = np.concatenate(([0], newlines + 1))
    ends = np.concatenate((newlines, [len(data)]))
    if len(starts) and starts[-1] == len(data):  # text ending in a newline: no empty last line
        starts, ends = starts[:-1], ends[:-1]
    return starts.astype(np.int64), ends.astype(np.int64)


def error_text(code: int, arg: int) -> str:
    text = compiled.ERRORS[code] if 0 < code < len(compiled.ERRORS) else f"internal error {code}"
    return f"{text} (move {arg})" if arg else text
