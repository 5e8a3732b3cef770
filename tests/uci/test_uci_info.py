"""Score and WDL formatting (docs/uci-and-tools.md §5.1) and the option table (§3, §4)."""

from __future__ import annotations

import math
import re

import chess
import pytest

from lc0py.errors import UsageError
from lc0py.search.search import PvLine, SearchInfo
from lc0py.uci.info import InfoFormat, compute_score, info_lines, wdl_mu, wdl_permille
from lc0py.uci.options import Options


def _line(wl: float, d: float, mate: int | None = None) -> PvLine:
    return PvLine([chess.Move.from_uci("e2e4")], wl, d, 10.0, 5, mate)


def test_wdl_mu_matches_exact_formula() -> None:
    wl, d = 0.2, 0.5
    w, lo = (1 + wl - d) / 2, (1 - wl - d) / 2
    a, b = math.log(1 / lo - 1), math.log(1 / w - 1)
    mu, wl2, d2 = wdl_mu(wl, d)
    assert mu == pytest.approx((a - b) / (a + b), abs=0.01)  # lc0's FastLog
    assert wl2 == pytest.approx(wl, abs=0.005) and d2 == pytest.approx(d, abs=0.005)
    score = compute_score(_line(wl, d))
    assert score.kind == "cp" and score.value == int(100 * mu)


def test_cp_fallback_without_draws_or_wdl() -> None:
    # d = 0 puts w+l = 1: mu undefined -> 45*tan(1.567*wl).
    assert compute_score(_line(0.5, 0.0)).value == int(45 * math.tan(1.56728071628 * 0.5))
    # A net without WDL always reports the fallback.
    s = compute_score(_line(0.2, 0.5), has_wdl=False)
    assert s.value == int(45 * math.tan(1.56728071628 * s.wl))


def test_mate_and_other_score_types() -> None:
    assert (compute_score(_line(1.0, 0.0, mate=3)).kind, compute_score(_line(1.0, 0.0, mate=3)).value) == (
        "mate",
        3,
    )
    assert compute_score(_line(-1.0, 0.0, mate=-2)).value == -2
    assert compute_score(_line(0.25, 0.5), "win_percentage").value == 6250
    assert compute_score(_line(0.25, 0.5), "W-L").value == 2500
    assert compute_score(_line(-0.25, 0.5), "centipawn").value == int(90 * math.tan(1.5637541897 * -0.25))


@pytest.mark.parametrize(
    "wl,d,expected",
    [
        (0.0, 1.0, (0, 1000, 0)),
        (1.0, 0.0, (1000, 0, 0)),
        (0.1, 0.3, (400, 300, 300)),
        (0.0015, 0.997, (2, 997, 1)),
    ],
)
def test_wdl_permille(wl: float, d: float, expected: tuple[int, int, int]) -> None:
    assert wdl_permille(wl, d) == expected
    assert sum(wdl_permille(wl, d)) == 1000


def test_info_line_field_order() -> None:
    info = SearchInfo(
        depth=3,
        seldepth=5,
        time_ms=120,
        nodes=400,
        nps=3500,
        playouts=400,
        nn_evals=300,
        lines=[PvLine([chess.Move.from_uci("e2e4"), chess.Move.from_uci("e7e5")], 0.1, 0.3, 40, 300)],
    )
    text = info_lines(info, InfoFormat(show_wdl=True))[0]
    assert text.startswith("info depth 3 seldepth 5 time 120 nodes 400 score cp ")
    # The WDL_mu fast-math rewrite moves the permille by a few (lc0 does the same).
    assert re.search(
        r" score cp \d+ wdl (39\d|40\d) (29\d|30\d) (29\d|30\d) nps 3500 tbhits 0 pv e2e4 e7e5$", text
    )
    info.nps = None
    assert " nps " not in info_lines(info, InfoFormat())[0]


def test_castling_in_chess960_form() -> None:
    board = chess.Board("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1")
    info = SearchInfo(1, 2, 0, 2, None, 2, 2, [PvLine([chess.Move.from_uci("e1g1")], 0, 0, 0, 1)])
    assert info_lines(info, InfoFormat(chess960=True), board)[0].endswith("pv e1h1")
    assert info_lines(info, InfoFormat(), board)[0].endswith("pv e1g1")


def test_options_table() -> None:
    o = Options()
    assert o.spec("cpuct").uci_line() == "option name CPuct type string default 1.745000"
    assert (
        o.spec("FPUSTRATEGY").uci_line()
        == "option name FpuStrategy type combo default reduction var reduction var absolute"
    )
    o.set("cPuCt", "2.5")
    o.set("fpustrategy", "ABSOLUTE")
    p = o.search_params()
    assert p.cpuct == 2.5 and p.fpu_absolute
    with pytest.raises(UsageError, match="out of range"):
        o.set("CPuct", "101")
    with pytest.raises(UsageError, match="Unknown option: Bogus"):
        o.set("Bogus", "1")
    with pytest.raises(UsageError):
        o.set("MinibatchSize", "many")
