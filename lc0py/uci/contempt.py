"""Opponent-aware play as lc0 0.32 does it (``src/search/classic/params.cc``, ``search.cc``): the
contempt (a simulated Elo advantage) from ``UCI_Opponent``/``UCI_RatingAdv``/``Contempt``, turned
into the ``(ratio, diff)`` of lc0's WDL rescaling (:mod:`lc0py.search.wdl_rescale`), and the side
it favours from ``ContemptMode``.

* ``Contempt`` is a comma-separated list: a bare number replaces ``UCI_RatingAdv``; ``name=value``
  applies when ``name`` occurs (case-insensitively) in ``UCI_Opponent``'s text, first match wins.
* ``WDLCalibrationElo`` 0: lc0's "accurate" model from ``WDLDrawRateTarget`` /
  ``WDLDrawRateReference`` / ``WDLBookExitBias``; otherwise the "simplified" Elo model around that
  Elo. The contempt is clamped to ±``ContemptMaxValue`` and scaled by ``WDLContemptAttenuation``.
* ``ContemptMode`` ``play``: the side to move at the root (the other side while pondering);
  disabled for ``go infinite``; ``white_side_analysis`` / ``black_side_analysis``: that side;
  ``disable``: no contempt (the ratio still applies).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import chess

from lc0py.errors import UsageError

if TYPE_CHECKING:  # only for the annotation: options.py is the engine's, contempt.py is imported by it
    from lc0py.uci.options import Options

_LN10_200 = math.log(10) / 200


def contempt_value(opponent: str, contempt: str, rating_adv: float) -> float:
    """lc0's ``GetContempt``."""
    value = rating_adv
    for entry in contempt.split(","):
        if not entry:
            continue
        parts = entry.split("=")
        if len(parts) == 1:
            try:
                value = float(parts[0])
            except ValueError:
                raise UsageError(f"Invalid default contempt: {entry}") from None
        elif len(parts) == 2:
            if parts[0].lower() in opponent.lower():
                try:
                    value = float(parts[1])
                except ValueError:
                    raise UsageError(f"Invalid contempt entry: {entry}") from None
                break
        else:
            raise UsageError(f"Invalid contempt entry:{entry}")
    return value


def accurate_params(
    contempt: float,
    draw_rate_target: float,
    draw_rate_reference: float,
    book_exit_bias: float,
    contempt_max: float,
    attenuation: float,
) -> tuple[float, float]:
    """lc0's ``AccurateWDLRescaleParams``: (ratio, diff)."""
    if 0.0 < draw_rate_target < 0.001:
        draw_rate_target = 0.001
    scale_reference = 1.0 / math.log((1.0 + draw_rate_reference) / (1.0 - draw_rate_reference))
    scale_target = (
        scale_reference
        if draw_rate_target == 0
        else 1.0 / math.log((1.0 + draw_rate_target) / (1.0 - draw_rate_target))
    )
    ratio = scale_target / scale_reference
    sech2 = (
        1.0 / math.cosh(0.5 * (1 - book_exit_bias) / scale_target) ** 2
        + 1.0 / math.cosh(0.5 * (1 + book_exit_bias) / scale_target) ** 2
    )
    clamped = min(max(contempt, -contempt_max), contempt_max)
    diff = scale_target / scale_reference**2 / sech2 * _LN10_200 * clamped * attenuation
    return ratio, diff


def _game_pair_elo(elo: float) -> float:
    """lc0's ``ConvertRegularToGamePairElo``."""
    return elo + 0.5 * 250.0 * math.log(1.0 + math.exp((2737.0 - elo) / 250.0))


def simplified_params(
    contempt: float, draw_rate_reference: float, elo_active: float, contempt_max: float, attenuation: float
) -> tuple[float, float]:
    """lc0's ``SimplifiedWDLRescaleParams``: (ratio, diff)."""
    scale_zero, elo_slope, offset = 15.0, 425.0, 6.75
    scale_reference = 1.0 / math.log((1.0 + draw_rate_reference) / (1.0 - draw_rate_reference))
    elo_opp = elo_active - min(max(contempt, -contempt_max), contempt_max)
    elo_active = _game_pair_elo(elo_active)
    elo_opp = _game_pair_elo(elo_opp)

    def scale(elo: float) -> float:
        return 1.0 / (1.0 / scale_zero + math.exp(elo / elo_slope - offset))

    def mu(elo: float) -> float:
        return (
            -_LN10_200
            * scale_zero
            * elo_slope
            * math.log(1.0 + math.exp(-elo / elo_slope + offset) / scale_zero)
        )

    scale_target = math.sqrt((scale(elo_active) ** 2 + scale(elo_opp) ** 2) / 2.0)
    ratio = scale_target / scale_reference
    diff = 1.0 / scale_reference**2 * (mu(elo_active) - mu(elo_opp)) * attenuation
    return ratio, diff


def rescale_params(options: Options) -> tuple[float, float]:
    """(ratio, diff) from the UCI options."""
    get = options.__getitem__
    contempt = contempt_value(str(get("UCI_Opponent")), str(get("Contempt")), float(get("UCI_RatingAdv")))
    if float(get("WDLCalibrationElo")) == 0:
        return accurate_params(
            contempt,
            float(get("WDLDrawRateTarget")),
            float(get("WDLDrawRateReference")),
            float(get("WDLBookExitBias")),
            float(get("ContemptMaxValue")),
            float(get("WDLContemptAttenuation")),
        )
    return simplified_params(
        contempt,
        float(get("WDLDrawRateReference")),
        float(get("WDLCalibrationElo")),
        float(get("ContemptMaxValue")),
        float(get("WDLContemptAttenuation")),
    )


def contempt_side(mode: str, root_turn: chess.Color, infinite: bool, ponder: bool) -> chess.Color | None:
    """The side the contempt favours, None when disabled (lc0's ``contempt_mode_`` resolution)."""
    if mode == "disable":
        return None
    if mode == "white_side_analysis":
        return chess.WHITE
    if mode == "black_side_analysis":
        return chess.BLACK
    if infinite:
        return None
    return (not root_turn) if ponder else root_turn
