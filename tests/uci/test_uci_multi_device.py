"""The UCI engine over a multi-device backend of CPU children (``roundrobin``/``demux`` of two
``random`` children): the search's two feeder threads (``lc0py-feed``, ``lc0py-feed-wait``) and
each child's resolver and launcher threads run under ``go nodes``, ``go infinite`` + ``stop``,
``stop`` right after ``go``, a ``position`` or ``ucinewgame`` while a search runs and ``quit``
during a search: every ``go`` gets exactly one legal ``bestmove``, the engine answers ``isready``
(no hang), its thread count stays bounded across searches (no leaked feeder) and it exits with 0
and no traceback. A count of lines and threads, never a time."""

from __future__ import annotations

import os
from pathlib import Path

import chess
import pytest

from lc0py.search.warmup import warm_up

CHILDREN = "backend=random,delay_ms=1,(),()"
THREAD_SLACK = 8  # one search's threads (worker, watchdog, two feeder threads) with room to spare


@pytest.fixture(scope="module", autouse=True)
def _warm_core() -> None:
    warm_up()  # the compiled core, before any hang guard


def _threads(pid: int) -> int:
    """The thread count of a running process (Linux /proc; 0 elsewhere: no check)."""
    try:
        return len(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return 0


def _legal(line: str, board: chess.Board) -> None:
    move = line.split()[1]
    assert chess.Move.from_uci(move) in board.legal_moves, f"{line} in {board.fen()}"


@pytest.mark.parametrize("kind", ["roundrobin", "demux"])
def test_every_go_gets_one_bestmove_and_quit_during_a_search_exits_cleanly(
    kind: str, engine_factory, tiny_weights: Path  # type: ignore[no-untyped-def]
) -> None:
    e = engine_factory("--weights", str(tiny_weights), "--backend", kind, "--backend-opts", CHILDREN)
    e.sync()
    gos = 0

    def go(command: str) -> None:
        nonlocal gos
        e.send(command)
        gos += 1

    def bestmove(board: chess.Board) -> None:
        _legal(e.expect(lambda line: line.startswith("bestmove"))[-1], board)

    start, after_e4 = chess.Board(), chess.Board()
    after_e4.push_uci("e2e4")
    e.send("position startpos")
    go("go nodes 60")
    bestmove(start)
    baseline = _threads(e.proc.pid)  # every child's threads exist now
    most = baseline
    for _ in range(4):
        go("go infinite")  # searched a while (an info line with nodes), then stopped
        e.expect(lambda line: line.startswith("info") and " nodes " in line)
        e.send("stop")
        bestmove(start)
        go("go nodes 500")  # stopped at once, maybe before the first evaluation
        e.send("stop")
        bestmove(start)
        e.send("ucinewgame")  # between searches, and during one
        e.send("position startpos moves e2e4")
        go("go nodes 40")
        bestmove(after_e4)
        go("go infinite")
        e.send("position startpos")  # a new position while the search runs
        e.send("ucinewgame")
        e.send("stop")
        bestmove(after_e4)
        e.sync()
        most = max(most, _threads(e.proc.pid))
    assert most <= baseline + THREAD_SLACK, f"threads grew from {baseline} to {most}"
    go("go infinite")
    e.send("quit")  # during the search: lc0 answers it, then ends
    assert e.wait() == 0
    answers = [line for line in e.received if line.startswith("bestmove")]
    assert len(answers) == gos, f"{gos} go, {len(answers)} bestmove"
    assert not [line for line in e.received if line.startswith("error")]
    assert not [line for line in e.stderr if "Traceback" in line or "Error" in line], e.stderr[-5:]
