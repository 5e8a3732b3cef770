"""UCI conversation as a GUI has it (docs/uci-and-tools.md §3, §5)."""

from __future__ import annotations

import re
import time

import chess

from devtools.lc0_binary import HANG_GUARD_S

INFO_SCORE = re.compile(r"^info depth \d+ seldepth \d+ time \d+ nodes \d+ score (cp|mate) -?\d+ .*")


def _is_bestmove(line: str) -> bool:
    return line.startswith("bestmove ")


def test_full_transcript(engine_factory) -> None:
    e = engine_factory("--backend", "random")
    e.send("uci")
    lines = e.expect(lambda s: s == "uciok")
    assert lines[0].startswith("id name ")
    options = [s for s in lines if s.startswith("option name ")]
    assert "option name CPuct type string default 1.745000" in options
    assert "option name MinibatchSize type spin default 0 min 0 max 1024" in options
    assert "option name UCI_ShowWDL type check default false" in options
    assert any(s.startswith("option name Backend type combo default auto var auto") for s in options)
    assert not any("CPuctAtRoot" in s for s in options)  # hidden
    e.send("isready")
    e.expect(lambda s: s == "readyok")
    e.send("position startpos moves e2e4")
    e.send("go nodes 50")
    got = e.expect(_is_bestmove)
    scores = [s for s in got if INFO_SCORE.match(s)]
    assert scores, got
    # lc0 checks the node limit after each batch: the search may end a little past it
    assert 50 <= int(scores[-1].split(" nodes ")[1].split()[0]) < 50 + 256 and " wdl " not in scores[-1]
    board = chess.Board()
    board.push_uci("e2e4")
    parts = got[-1].split()
    assert chess.Move.from_uci(parts[1]) in board.legal_moves
    if len(parts) > 2:
        assert parts[2] == "ponder"
        board.push_uci(parts[1])
        assert chess.Move.from_uci(parts[3]) in board.legal_moves
    # Malformed commands: one error line each, the engine keeps running.
    e.send("foo bar")
    assert e.expect(lambda s: s.startswith("error"))[-1] == "error Unknown command: foo"
    e.send("position sideways")
    assert e.expect(lambda s: s.startswith("error"))[-1] == "error Position requires either fen or startpos"
    e.send("setoption name NoSuchThing value 1")
    assert e.expect(lambda s: s.startswith("error"))[-1] == "error Unknown option: NoSuchThing"
    e.send("position startpos moves e2e5")
    assert e.expect(lambda s: s.startswith("error"))[-1].startswith("error ")
    e.send("xyzzy")
    assert e.expect(lambda s: True)[-1] == "Nothing happens."
    # Options are case-insensitive; UCI_ShowWDL adds wdl.
    e.send("setoption name uci_showwdl value true")
    e.send("position startpos")
    e.send("go nodes 30")
    got = e.expect(_is_bestmove)
    assert re.search(r" wdl \d+ \d+ \d+ ", [s for s in got if INFO_SCORE.match(s)][-1])
    # stop during go infinite is answered at once.
    e.send("go infinite")
    e.expect(lambda s: s.startswith("info depth"))
    time.sleep(0.3)
    e.send("stop")
    # `go infinite` never ends by itself, so a bestmove at all proves that `stop` ended it (the
    # timeout is a hang guard, not a speed claim: no test asserts a wall-clock time).
    e.expect(_is_bestmove, timeout=HANG_GUARD_S)
    e.send("quit")
    assert e.proc.wait(HANG_GUARD_S) == 0


def test_uciok_does_not_wait_for_weights(engine_factory, tmp_path) -> None:
    e = engine_factory("--weights", str(tmp_path / "missing.pb.gz"), "--backend", "numpy")
    e.send("uci")
    e.expect(lambda s: s == "uciok")
    e.send("uci")
    lines = e.expect(lambda s: s == "uciok")
    # `uci` does not load the net: the bad file is not mentioned until something needs it.
    assert not any(s.startswith("error ") for s in lines)
    # The bad file is reported when the net is needed, at every command that needs it (as lc0),
    # and go invents nothing: no score, no bestmove; the engine exits (status 1) instead of
    # leaving the GUI waiting for a bestmove (docs/uci.md "Honest failures").
    e.send("isready")
    lines = e.expect(lambda s: s == "readyok")
    assert any(s.startswith("error ") for s in lines)
    e.send("position startpos")
    e.send("go nodes 10")
    assert e.wait(HANG_GUARD_S) == 1
    got = e.received
    assert any(s.startswith("info string no network can search here") for s in got), got
    assert sum(s.startswith("error ") and "missing.pb.gz" in s for s in got) >= 2, got
    assert not any(s.startswith(("bestmove", "info depth")) for s in got), got


def test_quit_during_search_is_prompt(engine_factory) -> None:
    e = engine_factory("--backend", "random")
    e.send("position startpos")
    e.send("go infinite")
    e.expect(lambda s: s.startswith("info depth"))
    e.send("quit")
    # `go infinite` never ends by itself: the process exiting at all proves `quit` ended the search.
    assert e.proc.wait(HANG_GUARD_S) == 0


def test_go_variants(engine_factory) -> None:
    e = engine_factory("--backend", "random")
    e.send("ucinewgame")
    e.send("position fen 6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1")
    e.send("go movetime 400")
    got = e.expect(_is_bestmove)
    assert got[-1].split()[1] == "a1a8"
    assert any(" score mate 1 " in s for s in got)
    # Zero time on the clock still gives a legal move, quickly.
    e.send("position startpos")
    e.send("go wtime 0 btime 0")
    got = e.expect(_is_bestmove)
    assert chess.Move.from_uci(got[-1].split()[1]) in chess.Board().legal_moves
    # searchmoves + nodes.
    e.send("go nodes 40 searchmoves a2a3 h2h4")
    got = e.expect(_is_bestmove)
    assert got[-1].split()[1] in ("a2a3", "h2h4")
    # Ponder needs the option.
    e.send("go ponder")
    assert e.expect(lambda s: s.startswith("error"))[-1] == (
        "error Ponder is not enabled, but the ponder search is requested."
    )
    e.send("setoption name Ponder value true")
    e.send("position startpos moves e2e4 e7e5")
    e.send("go ponder wtime 5000 btime 5000")
    e.expect(lambda s: s.startswith("info depth"))
    e.send("ponderhit")
    got = e.expect(_is_bestmove)
    assert (
        chess.Move.from_uci(got[-1].split()[1])
        in chess.Board("rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2").legal_moves
    )
    # Verbose move stats: one line per root move and the node line, before bestmove.
    e.send("setoption name VerboseMoveStats value true")
    e.send("position startpos")
    e.send("go nodes 60")
    got = e.expect(_is_bestmove)
    stats = [s for s in got if s.startswith("info string ")]
    assert len(stats) == 21 and stats[-1].startswith("info string node  (  20) N: ")
    assert int(stats[-1].split(" N: ")[1].split()[0]) >= 60  # lc0 checks the limit after each batch
    assert all(s.endswith(" ") for s in stats)
