"""With no search option set, lc0py's CPU search follows lc0's (issue 29, item 5).

lc0 0.32.1 picks its search defaults per backend: on its CPU backends one search thread and the
backend's recommended minibatch (eigen: 7). lc0py applies the same to its CPU backends when the
user leaves Threads and MinibatchSize at 0 (``lc0py.search.params.effective_params``). Both
engines are started with only a net and their CPU backend (lc0: eigen, lc0py: numpy); each of
the first 20 of lc0's benchmark positions is ``ucinewgame`` + ``position`` + ``go nodes 800``.

1. No option set (VerboseMoveStats only: it prints the root's visits, it changes no search):
   the same ``bestmove`` in >= 19 of 20 positions on each of two real nets (Maia 1900, Mean
   Girl 8; the issue measured 8/10 and 9/10 before).
2. The same with SmartPruningFactor=0 as the one option, so that neither search stops on its
   clock (smart pruning's node estimate depends on the machine's load): the root's visit shares
   are close, median L1 <= 0.035 (measured 0.015 and 0.027; both engines are deterministic at
   one search thread without a clock). With lc0py's former CPU defaults (2 minibatches of 32 in
   flight) the trees differ: median L1 0.045 and 0.065.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from devtools.lc0_binary import (
    RootStats,
    UciSession,
    find_lc0_binary,
    lc0_command,
    lc0py_command,
    lc0py_env,
    root_search,
    set_options,
)
from devtools.search_fidelity import l1_distance
from lc0py.tools.benchmark import POSITIONS as BENCHMARK_POSITIONS
from lc0py.tools.benchmark import split_position
from tests.shared_files import real_net

LC0 = find_lc0_binary()
NODES = 800
POSITIONS = [split_position(text) for text in BENCHMARK_POSITIONS[:20]]

pytestmark = [
    pytest.mark.oracle,
    pytest.mark.skipif(LC0 is None, reason="lc0's binary not installed (dev extra)"),
]


def _searches(session: UciSession) -> tuple[list[RootStats], list[RootStats]]:
    """(no option set, SmartPruningFactor=0) searches of every position."""
    session.run(["uci"], lambda s: s == "uciok")
    set_options(session, {"VerboseMoveStats": True})
    default = [root_search(session, fen, moves, NODES, timeout=600) for fen, moves in POSITIONS]
    set_options(session, {"SmartPruningFactor": 0})
    full = [root_search(session, fen, moves, NODES, timeout=600) for fen, moves in POSITIONS]
    return default, full


@pytest.mark.parametrize("net_name", ["maia-1900", "meangirl-8"])
def test_default_search_follows_lc0(net_name: str, tmp_path: Path) -> None:
    assert LC0 is not None
    net = real_net(tmp_path, net_name)
    with UciSession(lc0_command(LC0, net, "eigen"), name="lc0") as lc0:
        theirs, theirs_full = _searches(lc0)
    with UciSession(lc0py_command(net, "numpy"), env=lc0py_env(None), name="lc0py") as session:
        ours, ours_full = _searches(session)
    differ = [(k + 1, a.bestmove, b.bestmove) for k, (a, b) in enumerate(zip(ours, theirs, strict=True))
              if a.bestmove != b.bestmove]
    same = len(POSITIONS) - len(differ)
    l1 = [l1_distance(a.shares(), b.shares()) for a, b in zip(ours_full, theirs_full, strict=True)]
    report = (f"{net_name}: same best move {same}/{len(POSITIONS)}, differ (position, lc0py, lc0) "
              f"{differ}; L1 of the root visit shares (SmartPruningFactor=0): median "
              f"{statistics.median(l1):.3f}, "
              f"max {max(l1):.3f}")
    print(report)
    assert same >= 19, report
    assert statistics.median(l1) <= 0.035, report
