"""Temperature and Dirichlet noise through UCI, side by side with lc0 0.32.1's binary (same net):
the options exist (hidden, lc0's ranges), reach the search, and the move number that
``TempCutoffMove`` counts is lc0's (the FEN's full-move number plus the plies played, halved)."""

from __future__ import annotations

import collections
from collections.abc import Iterator
from pathlib import Path

import pytest

from devtools.lc0_binary import (
    UciSession,
    find_lc0_binary,
    lc0_command,
    lc0py_command,
    lc0py_env,
    position_command,
    root_search,
    set_options,
)
from lc0py.errors import UsageError
from lc0py.uci.options import Options

ROOT = Path(__file__).resolve().parents[2]
NET = ROOT / "weights" / "tiny-seed1.pb.gz"
LC0 = find_lc0_binary()
needs_lc0 = pytest.mark.skipif(LC0 is None, reason="lc0's binary not installed (dev extra)")


def test_options_reach_the_search_params() -> None:
    o = Options()
    for name, value in [
        ("Temperature", "1.5"),
        ("TempDecayMoves", "20"),
        ("TempDecayDelayMoves", "3"),
        ("TempCutoffMove", "40"),
        ("TempEndgame", "0.25"),
        ("TempValueCutoff", "12.5"),
        ("TempVisitOffset", "-0.5"),
        ("DirichletNoiseEpsilon", "0.25"),
        ("DirichletNoiseAlpha", "0.03"),
    ]:
        o.set(name, value)
    p = o.search_params()
    assert (p.temperature, p.temp_decay_moves, p.temp_decay_delay_moves) == (1.5, 20, 3)
    assert (p.temp_cutoff_move, p.temp_endgame, p.temp_value_cutoff) == (40, 0.25, 12.5)
    assert (p.temp_visit_offset, p.noise_epsilon, p.noise_alpha) == (-0.5, 0.25, 0.03)
    with pytest.raises(UsageError, match="DirichletNoiseEpsilon"):
        o.set("DirichletNoiseEpsilon", "1.5")
    with pytest.raises(UsageError, match="TempDecayMoves"):
        o.set("TempDecayMoves", "641")
    assert not any(s.startswith("option name Temperature ") for s in o.uci_lines())  # hidden, as lc0
    assert any(s.startswith("option name Temperature ") for s in o.uci_lines(show_hidden=True))


@pytest.fixture(scope="module")
def engines() -> Iterator[dict[str, UciSession]]:
    assert LC0 is not None
    sessions = {
        "lc0": UciSession(lc0_command(LC0, NET), name="lc0"),
        "lc0py": UciSession(lc0py_command(NET, "numpy"), env=lc0py_env(), name="lc0py"),
    }
    try:
        for s in sessions.values():
            s.run(["uci"], lambda line: line == "uciok")
        yield sessions
    finally:
        for s in sessions.values():
            s.close()


def _bestmoves(session: UciSession, moves: list[str], runs: int) -> collections.Counter[str]:
    counts: collections.Counter[str] = collections.Counter()
    for _ in range(runs):
        session.send("ucinewgame")
        session.send(position_command(None, moves))
        lines = session.run(["go nodes 60"], lambda s: s.startswith("bestmove"))
        counts[lines[-1].split()[1]] += 1
    return counts


@needs_lc0
@pytest.mark.oracle
@pytest.mark.parametrize(("moves", "drawn"), [([], False), (["e2e4"], True), (["e2e4", "e7e5"], True)])
def test_cutoff_move_counts_moves_as_lc0(engines, moves: list[str], drawn: bool) -> None:
    # TempCutoffMove 2 with TempEndgame 100 (nearly uniform over the visited moves): lc0 0.32.1
    # already draws after 1. e4 (its move number is 1 there) but not at the start position.
    # A drawn move repeated 8 times at random has a chance below 1e-6 over ~20 visited moves.
    for name, session in engines.items():
        set_options(session, {"TempCutoffMove": 2, "TempEndgame": 100, "VerboseMoveStats": False})
        counts = _bestmoves(session, moves, 8)
        assert (len(counts) > 1) == drawn, (name, counts)
        set_options(session, {"TempCutoffMove": 0, "TempEndgame": 0})


@needs_lc0
@pytest.mark.oracle
def test_noise_changes_the_root_priors_as_lc0(engines) -> None:
    # DirichletNoiseEpsilon 1: the priors are the noise alone; both engines print priors that sum
    # to 1 and differ from the network's
    for name, session in engines.items():
        set_options(session, {"VerboseMoveStats": True})
        clean = root_search(session, None, ["d2d4"], 1)
        set_options(session, {"DirichletNoiseEpsilon": 1.0})
        noisy = root_search(session, None, ["d2d4"], 1)
        set_options(session, {"DirichletNoiseEpsilon": 0.0, "VerboseMoveStats": False})
        p_clean = {m: s.p for m, s in clean.moves.items()}
        p_noisy = {m: s.p for m, s in noisy.moves.items()}
        assert p_noisy.keys() == p_clean.keys(), name
        assert sum(p_noisy.values()) == pytest.approx(1.0, abs=0.01), name
        assert sum(abs(p_noisy[m] - p_clean[m]) for m in p_clean) > 0.1, name


@needs_lc0
@pytest.mark.oracle
def test_value_cutoff_as_lc0(engines) -> None:
    # Temperature 100 draws nearly uniformly among the visited moves; TempValueCutoff 0.5 (0.01 in
    # Q) leaves out the moves whose Q is more than 0.01 below the most visited move's: here 4 of
    # the 11 visited moves stay in. 20 draws all inside them would have a chance near 1e-9 if the
    # rule were not applied. The Q the engines print is not quite the Q they use (lc0 prints WL
    # through its WDL rescaling with FastLog, about 0.002 off), hence the margin of 0.004; the
    # nearest move left out is 0.005 below the floor.
    fen = "r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4"
    options = {"VerboseMoveStats": True, "MinibatchSize": 1, "SmartPruningFactor": 0, "MaxPrefetch": 0}
    for name, session in engines.items():
        set_options(session, {**options, "Temperature": 100, "TempValueCutoff": 0.5})
        drawn = set()
        excluded_seen = 0
        for _ in range(20):
            stats = root_search(session, fen, [], 100)
            top = max(stats.moves.values(), key=lambda m: m.n)
            floor = top.fields["Q"] - 0.01 - 0.004
            visited = {m: v for m, v in stats.moves.items() if v.n > 0}
            allowed = {m for m, v in visited.items() if v.fields["Q"] is not None and v.fields["Q"] >= floor}
            assert stats.bestmove in allowed, (name, stats.bestmove)
            excluded_seen = max(excluded_seen, len(visited) - len(allowed))
            drawn.add(stats.bestmove)
        set_options(session, {"Temperature": 0, "TempValueCutoff": 100, "VerboseMoveStats": False,
                              "MinibatchSize": 0, "SmartPruningFactor": 1.33, "MaxPrefetch": 32})
        assert len(drawn) > 1 and excluded_seen >= 5, (name, drawn, excluded_seen)
