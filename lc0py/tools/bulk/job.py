"""Evaluating a whole file of positions or games, resumably: :func:`evaluate_file`.

The job (``lc0py bulk-eval``, or this module from Python):

1. **Plan** (``sources.plan``): the input is cut into chunks of records, written with the job's
   settings into ``OUT/manifest.json``. A rerun with the same input and settings finds the
   manifest and resumes; anything else in ``OUT`` is refused, never overwritten.
2. **Evaluate** each chunk not done yet: its records are read and encoded by the compiled encoder
   (PGN movetext by python-chess first), in ``--workers`` processes (``load_chunk``) or on
   read-ahead threads in this one, while the devices work on earlier chunks; the encoded rows
   go to the device threads (``feeder``: one thread per device, each child of a
   ``demux``/``roundrobin``/``multiplexing`` backend fed directly, ``--in-flight`` batches deep,
   batches cut across chunk boundaries), which reduce each batch's outputs at once (compiled) to
   the top-k legal-move policy, WDL, Q and moves-left.
3. **Write** the chunk as ``part-NNNNNN.jsonl`` (or ``.parquet``), atomically, then its record
   ``part-NNNNNN.done.json`` (positions, skipped lines, bad records with their location),
   atomically: a chunk is done when its record exists, so a job killed at any point loses
   nothing and writes nothing twice when it is run again.
4. **Check**: when every chunk is done, the rows of every part are counted and compared with the
   records, and the records with the input's (``summary.json``).

A bad FEN, move or game is reported on stderr with its location (``file:line``; PGN: game and
line) and in the chunk's record, and skipped; it never stops the job.
"""

from __future__ import annotations

import json
import os
import queue
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lc0py.backends.base import Backend, NetworkOutput, PlanesBatch
from lc0py.chess.core import records as compiled
from lc0py.chess.core.record_batch import EncodedChunk, encode_records, error_text, line_spans
from lc0py.errors import UsageError
from lc0py.storage.atomic import write_atomically
from lc0py.tools.bulk import sources
from lc0py.tools.bulk.feeder import DeviceFeeder, RunCounter, devices_of
from lc0py.tools.bulk.writers import (
    ResultBlock,
    count_rows,
    warm_writer,
    write_jsonl_pieces,
    write_part_and_record,
)

MANIFEST = "manifest.json"
SUMMARY = "summary.json"
JOB_FORMAT = "lc0py-bulk-eval/1"
DEFAULT_CHUNK = {"fen": 8192, "parquet": 8192, "pgn": 256}
ERRORS_SHOWN = 20  # bad records printed on stderr per run (all are in the chunk records)


@dataclass(frozen=True)
class Settings:
    """What decides the output: changing any of these makes a different job."""

    input_kind: str
    output_format: str = "jsonl"  # "jsonl" or "parquet"
    top: int = 10  # 0: every legal move
    chunk_records: int = 0  # 0: DEFAULT_CHUNK[input_kind]
    history_fill: str = "fen_only"
    probe_layers: tuple[int, ...] = ()
    weights: str = ""  # the net's identity (path, size) or "" for the backend's own

    @property
    def per_chunk(self) -> int:
        return self.chunk_records or DEFAULT_CHUNK[self.input_kind]

    @property
    def suffix(self) -> str:
        return ".parquet" if self.output_format == "parquet" else ".jsonl"

    @property
    def key_name(self) -> str:
        return {"pgn": "game", "parquet": "row"}.get(self.input_kind, "line")


@dataclass
class JobPlan:
    input: Path
    output: Path
    settings: Settings
    chunks: list[sources.Chunk]
    done: set[int] = field(default_factory=set)

    def part_path(self, index: int) -> Path:
        return self.output / f"part-{index:06d}{self.settings.suffix}"

    def record_path(self, index: int) -> Path:
        return self.output / f"part-{index:06d}.done.json"


@dataclass
class JobSummary:
    """What a run did and what the output folder holds (``summary.json``)."""

    output: str
    chunks: int
    chunks_run: int
    records: int
    positions: int
    skipped: int
    bad: int
    seconds: float
    positions_per_second: float
    complete: bool
    profile: dict[str, Any] | None = None  # StageTimes of this run (local runs)


def _input_identity(path: Path) -> dict[str, Any]:
    st = path.stat()
    return {"path": str(path.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def weights_identity(weights: str | os.PathLike[str] | None) -> str:
    if weights is None:
        return ""
    p = Path(weights)
    try:
        return f"{p.resolve()}:{p.stat().st_size}"
    except OSError:
        return str(weights)


def prepare_job(
    input_path: str | os.PathLike[str], output_dir: str | os.PathLike[str], settings: Settings
) -> JobPlan:
    """The job's plan: read from ``OUT/manifest.json`` when it is the same job (resume), else
    planned from the input and written there. A folder holding another job is refused."""
    src = Path(input_path)
    out = Path(output_dir)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--output {out}: not a directory")
    manifest_path = out / MANIFEST
    identity = _input_identity(src) if src.is_file() else None
    settings_json = asdict(settings)
    settings_json["probe_layers"] = list(settings.probe_layers)
    wanted: dict[str, Any] = {"format": JOB_FORMAT, "input": identity, "settings": settings_json}
    if manifest_path.is_file():
        try:
            manifest = json.loads(manifest_path.read_text())
        except (OSError, ValueError) as exc:
            raise UsageError(f"--output {out}: unreadable {MANIFEST} ({exc})") from None
        for key in ("format", "input", "settings"):
            if manifest.get(key) != wanted[key]:
                raise UsageError(
                    f"--output {out}: holds another job (its {key} differs: {manifest.get(key)} vs "
                    f"{wanted[key]}); give a new folder"
                )
        chunks = [sources.Chunk.from_list(c) for c in manifest["chunks"]]
    else:
        if out.is_dir() and any(out.iterdir()):
            raise UsageError(f"--output {out}: not empty and holds no {MANIFEST}; give a new folder")
        chunks = sources.plan(src, settings.input_kind, settings.per_chunk)
        out.mkdir(parents=True, exist_ok=True)
        manifest = {**wanted, "chunks": [c.to_list() for c in chunks]}
        write_atomically(manifest_path, json.dumps(manifest), what=f"--output {manifest_path}")
    plan = JobPlan(src, out, settings, chunks)
    plan.done = {c.index for c in chunks if plan.record_path(c.index).is_file()}
    return plan


# --- one chunk ----------------------------------------------------------------------------------
@dataclass
class LoadedChunk:
    """A chunk's records as text, encoded; ``where[r]``: the location of record ``r``."""

    chunk: sources.Chunk
    encoded: EncodedChunk
    where: list[str]
    extra_errors: list[tuple[int, str]]  # (record, error) found before encoding (PGN)


def load_chunk(
    path: str, kind: str, chunk: sources.Chunk, input_format: int, history_fill: str,
    records: sources.ChunkText | None = None,
) -> LoadedChunk:
    """Read and encode one chunk: FEN/EPD lines straight into the compiled encoder; Parquet rows
    and PGN games (python-chess reads the movetext) as text lines first (``records``: those lines
    already read, by a worker process: ``sources.read_records``). Runs on the job's read-ahead
    threads: the compiled encoder releases the GIL."""
    if kind == "fen":
        data = sources.read_bytes(path, chunk)
        starts, ends = line_spans(data)
        first_line = chunk.first + 1
        where = [f"{path}:{first_line + r}" for r in range(len(starts))]
        enc = encode_records(
            data,
            starts,
            ends,
            all_plies=False,
            capacity=len(starts),
            input_format=input_format,
            history_fill=history_fill,
        )
        return LoadedChunk(chunk, enc, where, [])
    text = records or sources.read_records(path, kind, chunk)
    pgn = kind == "pgn"
    return _encode_lines(chunk, text.lines, text.where, text.errors, pgn, input_format, history_fill)


def _encode_lines(
    chunk: sources.Chunk,
    lines: list[str],
    where: list[str],
    extra: list[tuple[int, str]],
    all_plies: bool,
    input_format: int,
    history_fill: str,
) -> LoadedChunk:
    text = "\n".join(line.replace("\n", " ") for line in lines).encode()
    starts, ends = line_spans(text + b"\n") if lines else (np.zeros(0, np.int64), np.zeros(0, np.int64))
    moves = sum(line.count(" ") for line in lines) if all_plies else 0
    enc = encode_records(
        text,
        starts,
        ends,
        all_plies=all_plies,
        capacity=len(lines) + moves,
        input_format=input_format,
        history_fill=history_fill,
    )
    for g, _ in extra:  # a game python-chess could not read is no position
        enc.status[g] = compiled.SKIPPED
    return LoadedChunk(chunk, enc, where, extra)


def default_workers(kind: str, cpus: int | None = None) -> int:
    """Worker processes reading chunks when ``--workers`` is not given: PGN, whose movetext
    python-chess reads at ~50,000 positions a second a core, one per CPU but one (at most
    ``DEFAULT_MAX_WORKERS``, ~45 MB each); Parquet none (pyarrow reads it, mostly without the GIL;
    ``--workers N`` gives it N); FEN/EPD never (nothing is read in Python)."""
    cpus = cpus or os.cpu_count() or 2
    return max(1, min(cpus - 1, DEFAULT_MAX_WORKERS)) if kind == "pgn" else 0


DEFAULT_MAX_WORKERS = 24
MAX_READ_AHEAD = 48  # chunks read ahead as text at most (a few bytes a position)
#: PGN games a worker reads at least as one part of a chunk (~2,800 positions, ~0.06-0.09 s of
#: python-chess): a chunk is read by up to chunk / PART_GAMES workers at once, so it is ready in
#: a fraction of one worker's ~0.7 s for 256 games (4 x H200's host)
PART_GAMES = 32
#: ... and of the run's first chunk, which every device waits for: cut finer, one part per
#: worker at most
FIRST_PART_GAMES = 8
#: chunks encoded ahead of the devices (PGN: ~30 MB of planes each): memory bounded
ENCODE_AHEAD = 3


class ChunkLoader:
    """Reads and encodes chunks (:func:`load_chunk`). With ``workers`` processes (0:
    ``default_workers``; ``inline``: none, as a Ray actor runs it), PGN and Parquet chunks are
    read there (``sources.read_records``: python-chess, pyarrow) and come back as text lines,
    which the compiled encoder turns into planes on the job's threads (GIL-free). Encoding in the
    workers was measured and dropped: the planes (1.3 KB a position) through a pipe cost more
    than the encoding (~1 µs a position), and unpickling them holds the job's GIL, which the
    devices' threads need. FEN/EPD chunks are read and encoded on the threads alone.

    The processes start, and import python-chess, as soon as the loader exists:
    ``evaluate_file`` makes it before the network loads, so they are ready when it is.
    ``input_format`` may be set until the first ``load``."""

    def __init__(self, plan: JobPlan, input_format: int, workers: int = 0, inline: bool = False) -> None:
        self.plan = plan
        self.input_format = input_format
        self.kind = plan.settings.input_kind
        self._pool: ProcessPoolExecutor | None = None
        wanted = 0 if inline or self.kind == "fen" else workers or default_workers(self.kind)
        self.workers = wanted
        self.read_s = 0.0  # PGN/Parquet records read (worker processes), summed over chunks
        self.encode_s = 0.0  # text to planes (FEN/EPD: with the read), summed over chunks
        self._times = threading.Lock()
        self._reads = 0  # chunks whose reading has started
        if self.workers:  # every process starts now, importing python-chess (or pyarrow)
            self._pool = _spawn_pool(self.workers, sources.warm_reader, self.kind)

    @property
    def read_ahead(self) -> int:
        """Chunks read at once (as text, in the workers): every worker busy plus one, at most
        ``MAX_READ_AHEAD``; none without workers (``encode`` reads)."""
        return min(self.workers + 1, MAX_READ_AHEAD) if self.workers else 0

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def parts(self, chunk: sources.Chunk) -> int:
        """Worker processes reading ``chunk`` at once, each a sub-range of its games (PGN; one
        ``PART_GAMES`` or more each, ``FIRST_PART_GAMES`` for the first chunk read, at most one
        per worker); Parquet is read whole (each part would read the row group again)."""
        if self._pool is None or self.kind != "pgn":
            return 1
        size = FIRST_PART_GAMES if not self._reads else PART_GAMES
        return max(1, min(self.workers, chunk.count // size))

    def read(self, chunk: sources.Chunk) -> ChunkReading | None:
        """Start reading ``chunk``'s records in the worker processes, as ``parts`` consecutive
        sub-ranges joined in order (``None``: no workers, ``encode`` reads it). Text is small (a
        few bytes a position): many chunks may be read ahead."""
        if self._pool is None:
            return None
        path = str(self.plan.input)
        ranges = sources.split_parts(chunk.count, self.parts(chunk))
        self._reads += 1
        if len(ranges) == 1:
            return ChunkReading([self._pool.submit(sources.timed_read_records, path, self.kind, chunk)])
        return ChunkReading(
            [self._pool.submit(sources.timed_read_records, path, self.kind, chunk, r) for r in ranges]
        )

    def encode(self, chunk: sources.Chunk, reading: ChunkReading | None) -> LoadedChunk:
        """``chunk`` encoded (its records from ``reading``, else read here)."""
        records = None
        if reading is not None:
            records, seconds = reading.result()
            with self._times:
                self.read_s += seconds
        t0 = time.perf_counter()
        fill = self.plan.settings.history_fill
        loaded = load_chunk(str(self.plan.input), self.kind, chunk, self.input_format, fill, records)
        with self._times:
            self.encode_s += time.perf_counter() - t0
        return loaded

    def load(self, chunk: sources.Chunk) -> LoadedChunk:
        """Read and encode ``chunk`` (waits for its worker)."""
        return self.encode(chunk, self.read(chunk))


class ChunkReading:
    """A chunk being read in the worker processes: whole, or as consecutive sub-ranges of its
    records by several workers, joined in order (``sources.ChunkText.join``: the same text as
    one read of the chunk)."""

    def __init__(self, parts: list[Future[tuple[sources.ChunkText, float]]]) -> None:
        self.parts = parts

    def done(self) -> bool:
        return all(p.done() for p in self.parts)

    def result(self) -> tuple[sources.ChunkText, float]:
        """The chunk's text and the workers' seconds, summed over the parts."""
        texts: list[sources.ChunkText] = []
        seconds = 0.0
        for p in self.parts:
            text, s = p.result()
            texts.append(text)
            seconds += s
        return sources.ChunkText.join(texts), seconds


@dataclass
class ChunkRecord:
    chunk: int
    records: int
    positions: int
    skipped: int
    bad: list[dict[str, str]]


@dataclass
class ChunkRun:
    """A chunk on its way through the devices: its output arrays, filled batch by batch by the
    device threads; ``event`` is set when every row is reduced."""

    loaded: LoadedChunk
    moves: np.ndarray
    probs: np.ndarray
    legal: np.ndarray
    wdl: np.ndarray
    mlh: np.ndarray | None
    counter: RunCounter
    event: threading.Event = field(default_factory=threading.Event)


class ChunkEvaluator:
    """Runs encoded chunks through a backend and reduces the outputs (one per process/actor):
    a :class:`~lc0py.tools.bulk.feeder.DeviceFeeder` feeds each device (each child of a
    multi-device backend) from its own thread, ``in_flight`` batches deep (default 2: the GPU
    runner's pinned slots), batches cut across chunk boundaries; ``start`` queues a chunk and
    returns, ``finish`` waits for it. With ``queue_completed`` every finished run also goes to
    ``next_completed`` (the local job takes them in the order they finish); ``linger``: see
    ``feeder.RowStream``."""

    def __init__(
        self,
        backend: Backend,
        settings: Settings,
        batch: int = 0,
        in_flight: int = 0,
        probe_net: Any = None,
        queue_completed: bool = False,
        linger: float | None = None,
    ) -> None:
        self.backend = backend
        self.settings = settings
        self.batch = int(batch or backend.info.recommended_batch or 256)
        self.in_flight = int(in_flight or 2)
        self.top = settings.top if settings.top > 0 else compiled.B.MAX_MOVES
        self.probe_net = probe_net
        self._queue: queue.Queue[ChunkRun] | None = queue.Queue() if queue_completed else None
        self._error: BaseException | None = None
        self._runs: list[ChunkRun] = []  # started, not finished (woken on a failure)
        self._lock = threading.Lock()
        self.feeder = DeviceFeeder(
            backend, self.batch, self.in_flight, self._reduce, self._done, self._failed, linger
        )

    @property
    def devices(self) -> int:
        return self.feeder.devices

    def close(self) -> None:
        self.feeder.close()

    def end_input(self) -> None:
        """No more chunks: the last rows go as a partial batch."""
        self.feeder.stream.close()

    def flush(self, on: bool) -> None:
        self.feeder.stream.flush(on)

    def warm_up(self) -> float:
        """One batch of the device batch size on every device at once, before the job's clock
        starts (a GPU captures that size's graph: once, not inside the timed run); seconds."""
        from lc0py.backends.registry import is_cpu_backend

        if getattr(self.backend, "is_cpu", False) or is_cpu_backend(self.backend):
            return 0.0
        t0 = time.perf_counter()
        n = self.feeder.batch
        from lc0py.chess.planes import NUM_PLANES as P

        zeros = PlanesBatch(np.zeros((n, P), np.uint64), np.zeros((n, P), np.float32))
        handles = [submit(zeros) for _, submit in devices_of(self.backend)]
        for h in handles:
            h.result()
        return time.perf_counter() - t0

    def _done(self, run: ChunkRun) -> None:
        run.event.set()
        if self._queue is not None:
            self._queue.put(run)

    def _failed(self, exc: BaseException) -> None:
        with self._lock:
            if self._error is None:
                self._error = exc
            runs = list(self._runs)
        for run in runs:
            run.event.set()
        if self._queue is not None:
            self._queue.put(None)  # type: ignore[arg-type]  # wakes next_completed

    def _raise(self) -> None:
        if self._error is not None:
            raise self._error

    def evaluate(self, loaded: LoadedChunk) -> tuple[ResultBlock, ChunkRecord]:
        """One chunk, start to finish (its last rows go as a partial batch if need be)."""
        run = self.start(loaded)
        self.flush(True)
        return self.finish(run)

    def start(self, loaded: LoadedChunk) -> ChunkRun:
        """Queue the chunk's rows for the devices and return; the devices never drain between
        chunks (the next chunk's rows join the same batches)."""
        self._raise()
        enc = loaded.encoded
        n = len(enc)
        k = self.top
        mlh = np.empty(n, np.float32) if self.backend.info.has_moves_left else None
        run = ChunkRun(loaded, np.empty((n, k), np.int32), np.empty((n, k), np.float32),
                       np.empty(n, np.int32), np.empty((n, 3), np.float32), mlh, RunCounter(n))
        with self._lock:
            self._runs.append(run)
        self.feeder.put(run)
        return run

    def next_completed(self, timeout: float | None = None) -> ChunkRun | None:
        """The next run whose rows are all reduced (``queue_completed``); ``None`` when none is
        within ``timeout`` seconds (``None``: wait for one)."""
        assert self._queue is not None
        self._raise()
        try:
            run = self._queue.get(timeout=timeout) if timeout != 0 else self._queue.get_nowait()
        except queue.Empty:
            return None
        self._raise()
        return run

    def wait_room(self, limit: int, timeout: float) -> bool:
        """Wait up to ``timeout`` s for the rows the devices have not taken yet to fall below
        ``limit``; whether they have (a device's failure is raised)."""
        self._raise()
        return self.feeder.stream.wait_room(limit, timeout)

    def _reduce(self, run: ChunkRun, first: int, stop: int, out: NetworkOutput) -> None:
        enc = run.loaded.encoded
        compiled.summarise_rows(
            enc.pos[first:stop],
            enc.transform[first:stop],
            out.policy,
            self.top,
            run.moves[first:stop],
            run.probs[first:stop],
            run.legal[first:stop],
        )
        run.wdl[first:stop] = out.wdl
        if run.mlh is not None:
            run.mlh[first:stop] = out.moves_left

    def finish(self, run: ChunkRun) -> tuple[ResultBlock, ChunkRecord]:
        """Wait for ``run``'s rows to be reduced; its block and record."""
        run.event.wait()
        self._raise()
        with self._lock:
            if run in self._runs:
                self._runs.remove(run)
        loaded, enc, n = run.loaded, run.loaded.encoded, len(run.loaded.encoded)
        moves, probs, legal, wdl, mlh = run.moves, run.probs, run.legal, run.wdl, run.mlh
        chunk = loaded.chunk
        key = chunk.first + enc.record + (0 if self.settings.input_kind == "parquet" else 1)
        ply = enc.ply.copy() if self.settings.input_kind == "pgn" else None
        probes = self._probes(loaded) if self.settings.probe_layers else None
        block = ResultBlock(self.settings.key_name, key, ply, moves, probs, legal, wdl, mlh, probes)
        bad = [{"where": loaded.where[r], "error": err} for r, err in loaded.extra_errors]
        extra = {r for r, _ in loaded.extra_errors}
        for r in np.flatnonzero(enc.status > 0).tolist():
            if r not in extra:
                bad.append(
                    {"where": loaded.where[r], "error": error_text(int(enc.status[r]), int(enc.err_arg[r]))}
                )
        bad.sort(key=lambda b: b["where"])
        skipped = int((enc.status == compiled.SKIPPED).sum()) - len(extra)
        record = ChunkRecord(chunk.index, chunk.count, n, skipped, bad)
        return block, record

    def _probes(self, loaded: LoadedChunk) -> list[list[list[float]]]:
        """Per position, per probed layer: the residual stream after the layer (``Net.trace``'s
        ``*.output`` activations, in order), averaged over the squares. The trace runs the numpy
        reference on the position alone (no move history), one position at a time: for small
        jobs and for looking inside a net, not for millions of positions."""
        from lc0py.chess.core.board import board_from_pos

        if self.probe_net is None:
            raise UsageError("--probe-layers needs --weights (the trace runs on the net)")
        out = []
        for r in range(len(loaded.encoded)):
            board = board_from_pos(loaded.encoded.pos[r])
            trace = self.probe_net.trace(board)
            layers = [v for name, v in trace.activations.items() if name.endswith(".output")]
            row = []
            for layer in self.settings.probe_layers:
                if not 0 <= layer < len(layers):
                    raise UsageError(f"--probe-layers {layer}: the net has layers 0..{len(layers) - 1}")
                row.append(
                    np.asarray(layers[layer], np.float64)
                    .reshape(64, -1)
                    .mean(axis=0)
                    .astype(np.float32)
                    .tolist()
                )
            out.append(row)
        return out


_MAIN_SWAP = threading.Lock()


def _spawn_pool(count: int, warm: Callable[..., None], *args: Any) -> ProcessPoolExecutor:
    """``count`` worker processes, started now, each running ``warm(*args)`` first (its
    imports). Spawned, not forked: the job's threads and a device's state must not be copied.

    A spawned child imports its parent's ``__main__`` file first; in a Ray actor that is Ray's
    worker script, i.e. all of Ray (~870 modules, 0.67 s a process here, and its memory in each
    of the 15 readers and writers of each of 4 actors). Nothing the workers run lives in
    ``__main__``, so they are started with a bare one (the processes start in ``submit``)."""
    import multiprocessing
    import types

    pool = ProcessPoolExecutor(count, mp_context=multiprocessing.get_context("spawn"))
    with _MAIN_SWAP:
        main = sys.modules["__main__"]
        sys.modules["__main__"] = types.ModuleType("__main__")
        try:
            for _ in range(count):  # one task each, none idle yet: a process each
                pool.submit(warm, *args)
        finally:
            sys.modules["__main__"] = main
    return pool


def write_chunk(plan: JobPlan, block: ResultBlock, record: ChunkRecord, pool: Any = None) -> Any:
    """The part, then its record (both atomic): the record says the part is complete. With
    ``pool`` (writer processes) it runs there and the future is returned."""
    args = (
        plan.part_path(record.chunk),
        plan.record_path(record.chunk),
        block,
        json.dumps(asdict(record)),
        plan.settings.output_format,
    )
    if pool is not None:
        return pool.submit(write_part_and_record, *args)
    write_part_and_record(*args)
    return None


def check_output(
    plan: JobPlan, chunks_run: int, seconds: float, positions_run: int, profile: dict[str, Any] | None = None
) -> JobSummary:
    """Every chunk done? Rows of every part equal to its record, records to the input's."""
    done = {c.index for c in plan.chunks if plan.record_path(c.index).is_file()}
    plan.done = done
    records = positions = skipped = bad = 0
    complete = len(done) == len(plan.chunks)
    for c in plan.chunks:
        if c.index not in done:
            continue
        rec = json.loads(plan.record_path(c.index).read_text())
        rows = count_rows(plan.part_path(c.index), plan.settings.output_format)
        if rows != rec["positions"] or rec["records"] != c.count:
            raise UsageError(
                f"--output {plan.output}: part {c.index} holds {rows} rows for "
                f"{rec['positions']} positions of {rec['records']}/{c.count} records"
            )
        records += rec["records"]
        positions += rec["positions"]
        skipped += rec["skipped"]
        bad += len(rec["bad"])
    planned = sum(c.count for c in plan.chunks)
    if complete and records != planned:
        raise UsageError(f"--output {plan.output}: {records} records evaluated, the input has {planned}")
    summary = JobSummary(
        str(plan.output),
        len(plan.chunks),
        chunks_run,
        records,
        positions,
        skipped,
        bad,
        round(seconds, 3),
        round(positions_run / seconds, 1) if seconds > 0 else 0.0,
        complete,
        profile,
    )
    if complete:
        write_atomically(plan.output / SUMMARY, json.dumps(asdict(summary)), what=f"--output {SUMMARY}")
    return summary


class BadRecordPrinter:
    """Bad records on stderr, the first ``ERRORS_SHOWN`` of a run, then a count."""

    def __init__(self, stream: Any = None) -> None:
        self.stream = stream or sys.stderr
        self.count = 0

    def __call__(self, record: ChunkRecord) -> None:
        for b in record.bad:
            self.count += 1
            if self.count <= ERRORS_SHOWN:
                print(f"bulk-eval: {b['where']}: {b['error']} (skipped)", file=self.stream)

    def close(self) -> None:
        if self.count > ERRORS_SHOWN:
            print(
                f"bulk-eval: {self.count - ERRORS_SHOWN} more bad records (in part-*.done.json)",
                file=self.stream,
            )


def run_local(
    plan: JobPlan,
    backend: Backend,
    *,
    batch: int = 0,
    in_flight: int = 0,
    workers: int = 0,
    writers: int = -1,
    probe_net: Any = None,
    on_chunk: Callable[[ChunkRecord], None] | None = None,
    show_progress: bool | None = None,
    loader: ChunkLoader | None = None,
) -> JobSummary:
    """Evaluate every chunk of ``plan`` not done yet on ``backend`` in this process (``workers``
    processes reading PGN/Parquet, ``writers`` JSON/Parquet writing processes; -1/0:
    automatic/none; ``loader``: one already started, its ``workers`` then; ``in_flight``: batches
    in flight per device, default 2).

    The job's thread only hands chunks on: loaded chunks (read and encoded on the read-ahead
    threads, PGN movetext in the worker processes) go to the device threads (``ChunkEvaluator``),
    finished ones to the writers; at most about ``devices x (in_flight + 2)`` batches of rows
    wait for the devices (bounded memory)."""
    from lc0py.tools.progress import progress

    if loader is None:
        loader = ChunkLoader(plan, backend.info.input_format, workers)
    loader.input_format = backend.info.input_format
    todo = [c for c in plan.chunks if c.index not in plan.done]
    printer = BadRecordPrinter()
    positions_run = 0
    total = sum(c.count for c in todo)
    unit = "game" if plan.settings.input_kind == "pgn" else "pos"
    cpus = os.cpu_count() or 2
    if writers < 0:  # auto: JSON formatting in processes of its own where there are cores for it
        writers = default_writers(cpus)
    writer_pool = _spawn_pool(writers, warm_writer) if writers else None
    evaluator = ChunkEvaluator(backend, plan.settings, batch, in_flight, probe_net, queue_completed=True)
    prof = StageTimes()
    switch = sys.getswitchinterval()
    # the device threads take the GIL back after every wait; at the default 5 ms a busy Python
    # thread (JSON formatting, a reader's unpickling) would hold each of them that long
    sys.setswitchinterval(min(switch, SWITCH_INTERVAL))
    try:
        prof.warmup_s = evaluator.warm_up()
        started = time.perf_counter()
        evaluator.feeder.origin = started
        limit_rows = evaluator.devices * (evaluator.in_flight + 2) * evaluator.feeder.batch
        with (
            ThreadPoolExecutor(ENCODE_AHEAD + 1, thread_name_prefix="lc0py-bulk") as pool,
            progress(total, "bulk-eval", unit=unit, enabled=show_progress) as bar,
        ):
            # chunks being read as text (many: small), then encoded (few: planes are large)
            reading: deque[tuple[sources.Chunk, ChunkReading | None]] = deque()
            ahead: deque[Future[LoadedChunk]] = deque()
            writing: deque[Future[float | None]] = deque()
            queue_ = iter(todo)
            for c in queue_:
                reading.append((c, loader.read(c)))
                if len(reading) >= max(1, loader.read_ahead):
                    break

            def read_and_encode_ahead() -> None:
                while reading and len(ahead) < ENCODE_AHEAD:
                    c, text = reading.popleft()
                    ahead.append(pool.submit(loader.encode, c, text))
                    nxt = next(queue_, None)
                    if nxt is not None:
                        reading.append((nxt, loader.read(nxt)))

            read_and_encode_ahead()
            out_runs = 0
            ending = False  # every chunk is on the devices

            def collect(timeout: float | None) -> bool:
                """Hand a finished chunk to the writers (waiting up to ``timeout`` s for one,
                ``None``: until one is); whether there was one."""
                nonlocal positions_run, out_runs
                t0 = time.perf_counter()
                run = evaluator.next_completed(timeout)
                t1 = time.perf_counter()
                prof.wait_devices_s += t1 - t0
                if run is None:
                    return False
                out_runs -= 1
                block, record = evaluator.finish(run)
                t2 = time.perf_counter()
                prof.finish_s += t2 - t1
                while len(writing) > writers:  # bounded: at most writers + 1 parts waiting
                    prof.write_s += writing.popleft().result() or 0.0
                prof.wait_writers_s += time.perf_counter() - t2
                if writer_pool is not None and ending and writers > 1 and plan.settings.suffix == ".jsonl":
                    # the job's last parts: each formatted by all the writers at once (the tail)
                    args = (plan.part_path(record.chunk), plan.record_path(record.chunk), writer_pool)
                    pieces = (block, json.dumps(asdict(record)), writers)
                    writing.append(pool.submit(write_jsonl_pieces, *args, *pieces))
                elif writer_pool is not None:
                    writing.append(write_chunk(plan, block, record, writer_pool))
                else:
                    writing.append(pool.submit(write_chunk_timed, plan, block, record))
                printer(record)
                if on_chunk is not None:
                    on_chunk(record)
                positions_run += record.positions
                bar.update(run.loaded.chunk.count)
                return True

            # The next chunk joins the stream while the devices still have rows of the last one:
            # they never drain between chunks. It waits only while the rows not yet taken are
            # ``limit_rows`` or more (the memory bound: those rows' planes, plus the batches in
            # flight), handing finished chunks to the writers meanwhile. (Waiting instead for
            # the last chunk to finish, as before, drained every device at every chunk end: on
            # 4 x H200 ~30 ms a chunk and a partial batch each time, ~1.3 s of an 8.3 s run.)
            while ahead:
                while not ahead[0].done():  # finished chunks go on to the writers meanwhile
                    if out_runs and collect(0):
                        continue
                    t0 = time.perf_counter()
                    wait([ahead[0]], timeout=POLL_S)
                    prof.wait_input_s += time.perf_counter() - t0
                loaded = ahead.popleft().result()
                read_and_encode_ahead()
                while out_runs and not evaluator.wait_room(limit_rows, 0):
                    if not collect(0):
                        t0 = time.perf_counter()
                        evaluator.wait_room(limit_rows, POLL_S)
                        prof.wait_devices_s += time.perf_counter() - t0
                evaluator.start(loaded)
                out_runs += 1
            evaluator.end_input()
            ending = True
            while out_runs:
                collect(None)
            t0 = time.perf_counter()
            while writing:
                prof.write_s += writing.popleft().result() or 0.0
            prof.wait_writers_s += time.perf_counter() - t0
        seconds = time.perf_counter() - started
    finally:
        sys.setswitchinterval(switch)
        loader.close()
        evaluator.close()
        printer.close()
        if writer_pool is not None:
            writer_pool.shutdown(wait=True, cancel_futures=True)
    prof.read_s, prof.encode_s = loader.read_s, loader.encode_s
    prof.devices = [d.as_dict() for d in evaluator.feeder.stats]
    summary = check_output(plan, len(todo), seconds, positions_run, prof.as_dict())
    return summary


def default_writers(cpus: int) -> int:
    """Writer processes when ``--writers`` is not given: none on 2 CPUs, else one per 6 CPUs, at
    most 8 (JSON formatting, ~40,000 positions a second each, must keep up with 4 GPUs)."""
    return 0 if cpus <= 2 else max(1, min(8, cpus // 6))


#: seconds the job's thread waits for input or room before it looks for finished chunks again
POLL_S = 0.01
#: the interpreter's switch interval while a job runs (seconds; Python's default is 0.005)
SWITCH_INTERVAL = 0.0005


@dataclass
class StageTimes:
    """Where a run's time went (seconds; ``bulk-eval --profile`` prints them): summed over the
    chunks for the stages that run in parallel (read, encode, write), wall time of the job's
    thread for its waits."""

    warmup_s: float = 0.0  # one batch on every device before the clock starts
    read_s: float = 0.0  # PGN/Parquet records read in the worker processes (per chunk, summed)
    encode_s: float = 0.0  # text to planes on the read-ahead threads (summed)
    wait_input_s: float = 0.0  # the job's thread waiting for the next encoded chunk
    wait_devices_s: float = 0.0  # ... waiting for a chunk to finish on the devices
    finish_s: float = 0.0  # ... building a finished chunk's block and record
    wait_writers_s: float = 0.0  # ... waiting for a writer to be free
    write_s: float = 0.0  # formatting and writing the parts (writers, summed)
    devices: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {k: round(v, 4) if isinstance(v, float) else v for k, v in asdict(self).items()}
        return out


def write_chunk_timed(plan: JobPlan, block: ResultBlock, record: ChunkRecord) -> float:
    t0 = time.perf_counter()
    write_chunk(plan, block, record)
    return time.perf_counter() - t0


def evaluate_file(
    input_path: str | os.PathLike[str],
    output_dir: str | os.PathLike[str],
    weights: str | os.PathLike[str] | None = None,
    backend: str = "auto",
    options: str | None = None,
    *,
    input_format: str | None = None,
    output_format: str = "jsonl",
    top: int = 10,
    chunk_records: int = 0,
    batch: int = 0,
    in_flight: int = 0,
    workers: int = 0,
    writers: int = -1,
    history_fill: str = "fen_only",
    probe_layers: tuple[int, ...] = (),
    show_progress: bool | None = None,
) -> JobSummary:
    """Evaluate every position of ``input_path`` into ``output_dir`` (module docstring), resuming
    a job found there. ``backend``/``options`` as ``lc0py.load`` (``"demux"`` with
    ``"(backend=cuda-fp16,gpu=0),(backend=cuda-fp16,gpu=1)"`` uses two GPUs); ``top`` 0 keeps
    every legal move; ``output_format`` ``"jsonl"`` or ``"parquet"``; ``workers``: processes
    reading PGN movetext or Parquet rows (0: ``default_workers``: PGN CPUs - 1, at most 24);
    ``writers``: processes formatting and writing the parts (-1: ``default_writers``: none on 2
    CPUs, else a sixth of them, at most 8).

    >>> summary = evaluate_file("games.pgn", "out/", "net.pb.gz", "cuda-fp16")  # doctest: +SKIP
    >>> summary.positions, summary.complete  # doctest: +SKIP
    """
    from lc0py.api.net import open_net as load  # errors in the command line's terms

    settings = make_settings(
        input_path,
        input_format,
        output_format,
        top,
        chunk_records,
        history_fill,
        probe_layers,
        weights,
        backend,
    )
    plan = prepare_job(input_path, output_dir, settings)
    # the worker processes start (and load their code) while the network loads
    loader = ChunkLoader(plan, 0, workers)
    try:
        with load(None if weights is None else Path(weights), backend, options) as net:
            probe_net = net if probe_layers else None
            return run_local(
                plan,
                net.backend,
                batch=batch,
                in_flight=in_flight,
                writers=writers,
                probe_net=probe_net,
                show_progress=show_progress,
                loader=loader,
            )
    finally:
        loader.close()


def make_settings(
    input_path: str | os.PathLike[str],
    input_format: str | None,
    output_format: str,
    top: int,
    chunk_records: int,
    history_fill: str,
    probe_layers: tuple[int, ...],
    weights: str | os.PathLike[str] | None,
    backend: str,
) -> Settings:
    """The job's ``Settings``, each checked (one ``UsageError`` line per bad value)."""
    from lc0py.chess.encoding import HISTORY_FILLS

    kind = sources.input_kind(input_path, input_format)
    if output_format not in ("jsonl", "parquet"):
        raise UsageError(f"--output-format {output_format}: jsonl or parquet")
    if output_format == "parquet" or kind == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise UsageError('Parquet needs pyarrow: pip install "lc0py[parquet]"') from None
    if top < 0:
        raise UsageError(f"--top {top}: must be 0 (all moves) or more")
    if chunk_records < 0:
        raise UsageError(f"--chunk {chunk_records}: must be positive")
    if history_fill not in HISTORY_FILLS:
        raise UsageError(f"--history-fill {history_fill}: one of {', '.join(HISTORY_FILLS)}")
    ident = weights_identity(weights) if weights is not None else ("" if backend == "random" else "default")
    return Settings(kind, output_format, top, chunk_records, history_fill, tuple(probe_layers), ident)
