"""The move to play with a temperature (lc0's ``Search::EnsureBestMoveKnown`` and
``Search::GetBestRootChildWithTemperature``, ``src/search/classic/search.cc``), docs/search.md §9.

With ``Temperature`` (or ``TempCutoffMove`` + ``TempEndgame``) lc0 does not play the most visited
move but draws one: root move ``i`` has weight ``((Nᵢ + offset) / max_j(N_j + offset))^(1/T)``
(its prior instead when no move has ``N + offset > 0``; negative bases count as 0); moves whose Q
is more than ``TempValueCutoff / 50`` below the Q of the move with the largest ``N + offset`` are
left out. Only the move played is drawn: the ``info`` lines, the PV and the ponder move use the
order without temperature. Everything is float32 in lc0's order of operations.

The move number comes from lc0 0.32.1's game ply, which is the FEN's full-move field plus the
plies played after it (``Position::FromFen`` stores the full-move number as the ply count), so
``moves = ply / 2`` is 0 at the start position and 1 after ``1. e4``. lc0's binary was checked to
do exactly that (``TempCutoffMove=2`` already applies at ``startpos moves e2e4``).
"""

from __future__ import annotations

import bisect

import chess
import numpy as np

from lc0py.search.core import arrays as A
from lc0py.search.core.numeric import prior_value
from lc0py.search.core.pick import node_q
from lc0py.search.params import SearchParams

F32 = np.float32


def lc0_game_ply(board: chess.Board) -> int:
    """lc0 0.32.1's ``Position::GetGamePly`` of ``board``: the full-move number of the position
    the game started from (its FEN) plus the plies played since."""
    return board.root().fullmove_number + len(board.move_stack)


def effective_temperature(params: SearchParams, moves: int) -> float:
    """The temperature for the move numbered ``moves`` (``game ply / 2``): ``TempCutoffMove``
    switches to ``TempEndgame``; otherwise ``TempDecayMoves`` lowers ``Temperature`` linearly
    after ``TempDecayDelayMoves`` moves, never below ``TempEndgame``. 0: no temperature."""
    temperature = F32(params.temperature)
    cutoff = params.temp_cutoff_move
    delay = params.temp_decay_delay_moves
    decay = params.temp_decay_moves
    endgame = F32(params.temp_endgame)
    if cutoff and moves + 1 >= cutoff:
        temperature = endgame
    elif temperature and decay:
        if moves >= delay + decay:
            temperature = F32(0.0)
        elif moves >= delay:
            temperature = F32(temperature * (F32(delay + decay - moves) / F32(decay)))
        if temperature < endgame:
            temperature = endgame
    return float(temperature)


def temperature_weights(
    t: A.TreeArrays,
    root: int,
    temperature: float,
    visit_offset: float,
    value_cutoff: float,
    fpu: float,
    draw_score: float,
    allowed: np.ndarray,
) -> tuple[list[int], list[float]]:
    """The candidate root edges (in edge order) and their cumulative weights, as lc0 builds
    ``cumulative_sums``. ``allowed``: per edge 0/1 (searchmoves), empty = all; ``fpu``: the
    root's first-play urgency, the Q of a move without visits."""
    ne = int(t.nedges[root])
    kids = [-1] * ne
    c = int(t.child[root])
    while c >= 0:
        kids[int(t.index[c])] = c
        c = int(t.sibling[c])
    e0 = int(t.edge0[root])
    offset = F32(visit_offset)
    edges = [e for e in range(ne) if not len(allowed) or allowed[e]]
    n_of = {e: (int(t.n[kids[e]]) if kids[e] >= 0 else 0) for e in edges}
    q_of = {e: F32(node_q(t, kids[e], draw_score)) if n_of[e] > 0 else F32(fpu) for e in edges}
    max_n = F32(0.0)
    max_eval = F32(-1.0)
    for e in edges:
        shifted = F32(F32(n_of[e]) + offset)
        if shifted > max_n:
            max_n = shifted
            max_eval = q_of[e]
    min_eval = F32(max_eval - F32(F32(value_cutoff) / F32(50.0)))
    power = F32(F32(1.0) / F32(temperature))
    total = F32(0.0)
    chosen: list[int] = []
    sums: list[float] = []
    for e in edges:
        if q_of[e] < min_eval:
            continue
        if max_n <= F32(0.0):
            base = F32(prior_value(t.ep[e0 + e]))
        else:
            base = F32(F32(F32(n_of[e]) + offset) / max_n)
        total = F32(total + F32(np.power(max(F32(0.0), base), power)))
        chosen.append(e)
        sums.append(float(total))
    return chosen, sums


def pick_with_temperature(
    t: A.TreeArrays,
    root: int,
    temperature: float,
    visit_offset: float,
    value_cutoff: float,
    fpu: float,
    draw_score: float,
    allowed: np.ndarray,
    rng: np.random.Generator,
) -> int:
    """``GetBestRootChildWithTemperature``: a root edge drawn with the weights above (−1 when
    the root has no edge to draw from)."""
    chosen, sums = temperature_weights(
        t, root, temperature, visit_offset, value_cutoff, fpu, draw_score, allowed
    )
    if not chosen or not sums[-1] > 0.0:
        return -1
    toss = float(F32(rng.random() * sums[-1]))  # Random::GetFloat: uniform in [0, sum)
    return chosen[min(bisect.bisect_left(sums, toss), len(chosen) - 1)]
