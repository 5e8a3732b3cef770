"""Honest answers (issue 12): no stale position, a bestmove for every accepted go, nothing invented
without a network, mate/stalemate as such, pv always, weights as lc0 finds them.

The engine runs in-process (``UciEngine`` writing into a list), so each check is one command away.
"""

from __future__ import annotations

import io
import shutil
import threading
from pathlib import Path

import chess
import pytest

from lc0py.uci.engine import Output, UciEngine
from lc0py.uci.options import Options

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "weights" / "tiny-seed1.pb.gz"
BIG_ENOUGH = ROOT / "weights" / "tiny-pe-dense-seed2.pb.gz"  # >= 500 kB: autodiscover takes it


class Session:
    def __init__(self, *settings: tuple[str, str]) -> None:
        self.stream = io.StringIO()
        self.engine = UciEngine(Options(), Output(self.stream))
        for name, value in settings:
            self.engine.options.set(name, value)
        self.read = 0

    def send(self, line: str) -> list[str]:
        """Run one command (waiting for a search it starts) and return the new output lines."""
        self.engine.handle(line)
        if line.startswith("go") and self.engine.search is not None:
            self.engine.search.wait(120)
        text = self.stream.getvalue()
        new = text[self.read :]
        self.read = len(text)
        return new.splitlines()


@pytest.fixture
def no_lc0_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """lc0's weights folders all pointing into ``tmp_path`` (empty)."""
    data = tmp_path / "data"
    data.mkdir()
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    monkeypatch.setenv("XDG_DATA_DIRS", str(tmp_path / "system"))
    monkeypatch.setattr("lc0py.weights.discover.program_directory", lambda: tmp_path / "bin")
    return data


def test_refused_position_is_never_searched() -> None:
    s = Session(("WeightsFile", str(TINY)), ("Backend", "numpy"))
    s.send("position startpos moves e2e4")
    assert s.send("go nodes 5")[-1].startswith("bestmove ")
    out = s.send("position startpos moves e2e5")
    assert out == ["error illegal move 'e2e5' in position " + chess.STARTING_FEN]
    out = s.send("go nodes 5")
    assert out[-1] == "bestmove (none)" and out[0].startswith("error No position to search")
    assert not any(x.startswith("info") for x in out)
    # A good position afterwards is searched as usual.
    s.send("position startpos moves d2d4")
    best = s.send("go nodes 5")[-1].split()[1]
    board = chess.Board()
    board.push_uci("d2d4")
    assert chess.Move.from_uci(best) in board.legal_moves


def test_impossible_searchmoves_still_end_with_bestmove() -> None:
    s = Session(("WeightsFile", str(TINY)), ("Backend", "numpy"))
    s.send("position fen r3k2r/pppppppp/8/8/8/8/PPPPPPPP/R3K2R w KQkq - 0 1")
    assert s.send("go nodes 20 searchmoves e1b1") == ["error No legal searchmoves.", "bestmove (none)"]
    # Illegal entries are dropped (as lc0 does); castling in either notation is understood.
    assert s.send("go nodes 20 searchmoves e1b1 e1h1")[-1].split()[1] == "e1g1"
    s.send("setoption name UCI_Chess960 value true")
    assert s.send("go nodes 20 searchmoves e1c1")[-1].split()[1] == "e1a1"


@pytest.mark.parametrize(
    ("fen", "expected"),
    [
        ("rnb1kbnr/pppp1ppp/8/4p3/6Pq/5P2/PPPPP2P/RNBQKBNR w KQkq - 1 3", "score mate 0 wdl 0 0 1000"),
        ("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1", "score cp 0 wdl 0 1000 0"),
    ],
    ids=["mated", "stalemate"],
)
def test_mated_and_stalemated_roots(fen: str, expected: str) -> None:
    s = Session(("WeightsFile", str(TINY)), ("Backend", "numpy"), ("UCI_ShowWDL", "true"))
    s.send(f"position fen {fen}")
    out = s.send("go nodes 10")
    assert out[-1] == "bestmove (none)"
    assert expected in out[0] and out[0].startswith("info ")


def test_single_legal_move_has_a_pv() -> None:
    s = Session(("WeightsFile", str(TINY)), ("Backend", "numpy"))
    s.send("position fen 4k3/8/8/8/8/8/3r4/K7 w - - 0 1")
    out = s.send("go nodes 20")
    infos = [x for x in out if x.startswith("info depth")]
    assert infos and all(" pv a1b1" in x for x in infos), out
    assert out[-1].split()[:2] == ["bestmove", "a1b1"]


def test_missing_network_is_an_error_and_no_move(tmp_path: Path) -> None:
    s = Session(("WeightsFile", str(tmp_path / "none.pb.gz")), ("Backend", "numpy"))
    for _ in range(2):  # reported again at each command that needs the net (lc0 retries)
        assert s.send("position startpos")[-1].startswith("error ")
        assert s.send("isready")[0].startswith("error ")
        assert s.engine.exit_code is None  # the GUI may still set WeightsFile
    out = s.send("go nodes 5")
    # no move invented; the engine ends (status 1) so python-chess raises rather than waits
    assert out[0].startswith("error ") and "none.pb.gz" in out[0], out
    assert not any(line.startswith("bestmove") for line in out) and s.engine.exit_code == 1


def test_autodiscover_without_a_net_is_lc0s_error(no_lc0_folders: Path) -> None:
    s = Session(("Backend", "numpy"))
    assert s.send("isready") == ["error The numpy backend requires a network file.", "readyok"]
    s.send("position startpos")
    out = s.send("go nodes 5")
    assert out[0] == "error The numpy backend requires a network file." and s.engine.exit_code == 1, out
    assert not any(line.startswith("bestmove") for line in out)


def test_autodiscover_takes_the_newest_net_with_lc0s_magic(
    no_lc0_folders: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    folder = no_lc0_folders / "lc0" / "networks"
    folder.mkdir(parents=True)
    (folder / "zz-not-a-net.bin").write_bytes(b"\x0d\x00\x00\x00\x00" + bytes(600_000))  # wrong magic
    (folder / "small.pb.gz").write_bytes(TINY.read_bytes())  # right magic, < 500 kB
    shutil.copy(BIG_ENOUGH, folder / "net.pb.gz")
    s = Session(("Backend", "numpy"))
    assert s.send("isready") == ["readyok"]
    assert f"Loading weights file from: {folder / 'net.pb.gz'}" in capfd.readouterr().err
    s.send("position startpos")
    assert s.send("go nodes 5")[-1].startswith("bestmove ")


def test_random_weights_only_when_asked_and_said(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("lc0py.weights.default_net.default_weights_path", lambda: TINY)
    s = Session(("WeightsFile", "<random>"), ("Backend", "numpy"))
    out = s.send("isready")
    assert out[-1] == "readyok" and any("random weights" in x for x in out)
    assert "random weights" in capfd.readouterr().err
    s.send("position startpos")
    assert s.send("go nodes 5")[-1].startswith("bestmove ")


def test_no_network_needed_for_the_random_backend(no_lc0_folders: Path) -> None:
    s = Session(("Backend", "random"))
    s.send("position startpos")
    assert s.send("go nodes 5")[-1].startswith("bestmove ")


def test_per_pv_counters() -> None:
    s = Session(("WeightsFile", str(TINY)), ("Backend", "numpy"), ("MultiPV", "3"), ("PerPVCounters", "true"))
    s.send("position startpos")
    out = s.send("go nodes 60")
    last = [x for x in out if x.startswith("info depth")][-3:]
    nodes = [int(x.split(" nodes ")[1].split()[0]) for x in last]
    assert all(" multipv " in x for x in last) and sum(nodes) < 60 and nodes[0] >= nodes[1] >= nodes[2]


def test_no_bestmove_before_the_first_evaluation() -> None:
    """A deadline passed before the root's first evaluation (time 1 ms on the clock, a backend
    that answers late): as lc0 (``MaybeTriggerStop``), no ``bestmove`` until the evaluation is
    back, then the net's move with its score (it was the first legal move, unsearched)."""
    s = Session(("WeightsFile", str(TINY)), ("Backend", "numpy"), ("MoveOverheadMs", "0"))
    backend = s.engine._ensure_backend()
    assert backend is not None
    gate = threading.Event()
    slow = backend.evaluate_async

    def gated(planes):  # type: ignore[no-untyped-def]
        gate.wait(120)
        return slow(planes)

    backend.evaluate_async = gated  # type: ignore[method-assign]
    try:
        s.engine.handle("position startpos moves e2e4")
        s.engine.handle("go wtime 1 btime 1")
        search = s.engine.search
        assert search is not None
        s.engine.handle("stop")  # a stop waits for the evaluation too
        # the evaluation cannot come back before the gate opens: no answer meanwhile
        assert not search.wait(0.5)
        assert not any(x.startswith("bestmove") for x in s.stream.getvalue().splitlines())
    finally:
        gate.set()
    assert search.wait(120)
    out = s.stream.getvalue().splitlines()
    info = [x for x in out if x.startswith("info depth")][-1]
    assert " score " in info and " nodes 0 " not in info, out
    assert not any("WARNING" in x for x in out)
    assert [x for x in out if x.startswith("bestmove")] == [out[-1]]
    assert out[-1].split()[1] == info.split(" pv ")[1].split()[0]


def test_time_managers_other_than_legacy_are_refused() -> None:
    s = Session()
    assert s.send("setoption name TimeManager value smooth") == [
        "error Option TimeManager: 'smooth' is not available (lc0py implements 'legacy')"
    ]
    assert s.send("setoption name TimeManager value legacy") == []
