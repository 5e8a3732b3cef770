"""The engine never forfeits under a short clock (issue 30 item 1): lc0's rule of at least one
evaluation before any ``bestmove``, one evaluation at a time across searches, and a bounded
number of threads however many searches, ``stop`` and ``ucinewgame`` come.

The engine runs in this process on a slow *host* backend (it computes inside ``evaluate``, as
numpy and onnx-cpu do: the case whose evaluations piled up in leftover threads). Counts are
asserted, never times; the compiled search core is loaded before any hang guard starts."""

from __future__ import annotations

import random
import threading
import time

import chess
import pytest

from devtools.lc0_binary import HANG_GUARD_S
from lc0py.backends.base import PlanesBatch
from lc0py.backends.random_backend import RandomBackend
from lc0py.search.warmup import warm_up
from lc0py.uci.engine import Output, UciEngine
from lc0py.uci.options import Options


class SlowHostBackend(RandomBackend):
    """The random backend computing on the caller's thread, ``delay_s`` a batch; it records how
    many evaluations ran at once."""

    def __init__(self, delay_s: float) -> None:
        super().__init__()
        self.info.asynchronous = False  # a host backend: the search's evaluation thread runs it
        self.delay_s = delay_s
        self._count_lock = threading.Lock()
        self.active = 0
        self.most_active = 0
        self.evaluations = 0

    def evaluate(self, batch: PlanesBatch):  # type: ignore[no-untyped-def]
        with self._count_lock:
            self.active += 1
            self.evaluations += 1
            self.most_active = max(self.most_active, self.active)
        try:
            time.sleep(self.delay_s)
            return super().evaluate(batch)
        finally:
            with self._count_lock:
                self.active -= 1


class Lines:
    """A thread-safe stdout for the engine."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._lock = threading.Lock()

    def write(self, text: str) -> None:
        with self._lock:
            self.lines.extend(t for t in text.split("\n") if t)

    def flush(self) -> None:
        pass

    def snapshot(self) -> list[str]:
        with self._lock:
            return list(self.lines)


@pytest.fixture(scope="module", autouse=True)
def _warm_core() -> None:
    warm_up()  # the compiled core, before any hang guard (a first compile takes minutes in CI)


def _engine(delay_s: float) -> tuple[UciEngine, SlowHostBackend, Lines]:
    stream = Lines()
    engine = UciEngine(Options(), Output(stream))
    backend = SlowHostBackend(delay_s)
    engine.backend = backend
    return engine, backend, stream


def _run_guarded(fn) -> None:  # type: ignore[no-untyped-def]
    """``fn`` in a thread; a hang is a failure, not a stuck test run (no time is asserted)."""
    errors: list[BaseException] = []

    def target() -> None:
        try:
            fn()
        except BaseException as exc:  # reported below
            errors.append(exc)

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(HANG_GUARD_S)
    assert not t.is_alive(), "the engine hung"
    if errors:
        raise errors[0]


def _searched_bestmoves(lines: list[str]) -> list[tuple[str, bool]]:
    """Each ``bestmove`` with whether a scored ``info`` (an evaluated root) came before it
    since the previous ``bestmove``."""
    out = []
    scored = False
    for line in lines:
        if line.startswith("info") and " score " in line:
            scored = True
        if line.startswith("bestmove"):
            out.append((line, scored))
            scored = False
    return out


@pytest.mark.parametrize("go", ["go movetime 0", "go wtime 0 btime 0", "go wtime -500 btime -500 winc 0",
                                "go movetime 1", "go wtime 1 btime 1 winc 0 binc 0"])
def test_a_clock_at_zero_still_plays_an_evaluated_move(go: str) -> None:
    """lc0 waits for the first evaluation whatever the clock: the move is the net's, with a
    score before it, never the first legal move unsearched."""
    engine, backend, stream = _engine(delay_s=0.05)

    def play() -> None:
        engine.handle("position startpos")
        engine.handle(go)
        engine.handle("wait")
        engine.shutdown()

    _run_guarded(play)
    lines = stream.snapshot()
    assert [scored for _, scored in _searched_bestmoves(lines)] == [True], lines
    assert not any("not searched" in line for line in lines), lines
    # the move is the one the root's evaluation ranks first: the same as a one-node search
    reference, _, ref_stream = _engine(delay_s=0.0)
    _run_guarded(lambda: (reference.handle("position startpos"), reference.handle("go nodes 1"),
                          reference.handle("wait"), reference.shutdown()))
    want = [line for line in ref_stream.snapshot() if line.startswith("bestmove")][0].split()[1]
    assert _searched_bestmoves(lines)[0][0].split()[1] == want


def test_stop_storms_keep_threads_and_evaluations_bounded() -> None:
    """Searches cut short by the deadline, ``stop`` and ``ucinewgame`` in any order: one
    ``bestmove`` per ``go``, each after an evaluation; never two evaluations at once (the next
    search starts after the previous one's evaluation ended); the thread count stays bounded."""
    engine, backend, stream = _engine(delay_s=0.02)
    rng = random.Random(30)
    baseline = threading.active_count()
    most_threads = 0
    gos = 0

    def storm() -> None:
        nonlocal most_threads, gos
        board = chess.Board()
        for _ in range(60):
            kind = rng.randrange(6)
            if kind == 0:
                engine.handle("ucinewgame")
                board = chess.Board()
                continue
            if board.is_game_over():
                board = chess.Board()
            moves = " ".join(m.uci() for m in board.move_stack)
            engine.handle("position startpos" + (f" moves {moves}" if moves else ""))
            engine.handle(rng.choice(["go movetime 1", "go wtime 0 btime 0", "go infinite", "go nodes 3",
                                      "go wtime 10 btime 10 winc 1 binc 1"]))
            gos += 1
            if rng.random() < 0.7:
                engine.handle("stop")
            if rng.random() < 0.3:
                engine.handle("stop")
                engine.handle("ucinewgame")
            most_threads = max(most_threads, threading.active_count())
            board.push(next(iter(board.legal_moves)))
        engine.handle("stop")
        engine.handle("isready")
        most_threads = max(most_threads, threading.active_count())
        engine.shutdown()

    _run_guarded(storm)
    lines = stream.snapshot()
    answers = _searched_bestmoves(lines)
    assert len(answers) == gos, f"{gos} go, {len(answers)} bestmove"
    assert all(scored for _, scored in answers), [a for a in answers if not a[1]][:3]
    assert backend.most_active == 1, f"{backend.most_active} evaluations at once"
    # one search at a time: its worker, its watchdog, its evaluation thread (+ this test's guard)
    assert most_threads - baseline <= 4, f"{most_threads} threads (baseline {baseline})"
    assert threading.active_count() <= baseline + 1  # all joined after shutdown (+ the guard)
    assert "readyok" in lines
