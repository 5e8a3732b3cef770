"""Move choice with temperature (lc0's ``EnsureBestMoveKnown`` / ``GetBestRootChildWithTemperature``,
lc0py/search/temperature.py): the temperature schedule, lc0's move number, the exact weights on
hand-made visit counts, the draw's distribution, and the search's final move."""

from __future__ import annotations

import collections

import chess
import numpy as np
import pytest

from lc0py.search.params import SearchParams
from lc0py.search.search import SearchLimits
from lc0py.search.temperature import (
    effective_temperature,
    lc0_game_ply,
    pick_with_temperature,
    temperature_weights,
)

_ALL = np.zeros(0, np.uint8)


@pytest.mark.parametrize(
    ("options", "moves", "expected"),
    [
        ({}, 0, 0.0),
        ({"temperature": 1.5}, 40, 1.5),  # no decay: the same on every move
        ({"temperature": 1.0, "temp_decay_moves": 10}, 0, 1.0),
        ({"temperature": 1.0, "temp_decay_moves": 10}, 4, 0.6),  # (0 + 10 − 4) / 10
        ({"temperature": 1.0, "temp_decay_moves": 10}, 10, 0.0),
        ({"temperature": 1.0, "temp_decay_moves": 10, "temp_decay_delay_moves": 5}, 4, 1.0),
        ({"temperature": 1.0, "temp_decay_moves": 10, "temp_decay_delay_moves": 5}, 7, 0.8),  # (15 − 7)/10
        ({"temperature": 1.0, "temp_decay_moves": 10, "temp_endgame": 0.3}, 9, 0.3),  # floor
        ({"temperature": 1.0, "temp_decay_moves": 10, "temp_endgame": 0.3}, 30, 0.3),
        ({"temperature": 1.0, "temp_cutoff_move": 5, "temp_endgame": 0.2}, 3, 1.0),
        ({"temperature": 1.0, "temp_cutoff_move": 5, "temp_endgame": 0.2}, 4, 0.2),  # moves + 1 >= 5
        ({"temp_cutoff_move": 2, "temp_endgame": 0.7}, 1, 0.7),  # endgame temperature without Temperature
    ],
)
def test_temperature_schedule(options: dict, moves: int, expected: float) -> None:
    assert effective_temperature(SearchParams(**options), moves) == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize(
    ("fen", "moves", "ply"),
    [
        (None, [], 1),  # lc0 0.32.1 stores the FEN's full-move number as the ply count
        (None, ["e2e4"], 2),
        (None, ["e2e4", "e7e5"], 3),
        ("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1", [], 1),
        ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 2", [], 2),
        ("8/8/8/4k3/8/8/2K5/8 w - - 3 40", ["c2c3"], 41),
    ],
)
def test_lc0_game_ply(fen: str | None, moves: list[str], ply: int) -> None:
    board = chess.Board(fen) if fen else chess.Board()
    for m in moves:
        board.push_uci(m)
    assert lc0_game_ply(board) == ply


def _weights(chosen: list[int], sums: list[float]) -> dict[int, float]:
    out = {}
    prev = 0.0
    for e, s in zip(chosen, sums, strict=True):
        out[e] = s - prev
        prev = s
    return out


def test_weights_are_visits_to_the_power_of_one_over_t(hand_node) -> None:
    root = hand_node([0.4, 0.3, 0.2, 0.1], [(50, 0, 0.1), (30, 0, 0.0), (10, 0, -0.1)])
    t = root.tree.arrays
    chosen, sums = temperature_weights(t, root.id, 1.0, 0.0, 100.0, -1.0, 0.0, _ALL)
    w = _weights(chosen, sums)
    assert chosen == [0, 1, 2, 3]  # the unvisited edge is a candidate with weight 0
    assert [w[e] for e in chosen] == pytest.approx([1.0, 0.6, 0.2, 0.0], abs=1e-6)
    chosen, sums = temperature_weights(t, root.id, 0.5, 0.0, 100.0, -1.0, 0.0, _ALL)
    assert list(_weights(chosen, sums).values()) == pytest.approx([1.0, 0.36, 0.04, 0.0], abs=1e-6)


def test_visit_offset_and_negative_bases(hand_node) -> None:
    root = hand_node([0.4, 0.3, 0.2, 0.1], [(50, 0, 0.1), (30, 0, 0.0), (10, 0, -0.1)])
    chosen, sums = temperature_weights(root.tree.arrays, root.id, 1.0, -20.0, 100.0, -1.0, 0.0, _ALL)
    # (N − 20) / 30, negative ones count as 0
    assert list(_weights(chosen, sums).values()) == pytest.approx([1.0, 1 / 3, 0.0, 0.0], abs=1e-6)


def test_value_cutoff_drops_bad_moves(hand_node) -> None:
    # Q of the most visited move 0.1; TempValueCutoff 20 % = 0.4 in Q: moves below −0.3 are out,
    # the unvisited edge too (its Q is the FPU, −1 here)
    root = hand_node([0.4, 0.3, 0.2, 0.1], [(50, 0, 0.1), (30, 0, -0.5), (10, 0, -0.25)])
    chosen, _ = temperature_weights(root.tree.arrays, root.id, 1.0, 0.0, 20.0, -1.0, 0.0, _ALL)
    assert chosen == [0, 2]


def test_priors_when_no_move_has_visits(hand_node) -> None:
    # every N + offset <= 0: the priors ^ (1/T) are the weights
    root = hand_node([0.5, 0.3, 0.2], [(2, 0, 0.0), (1, 0, 0.0)])
    chosen, sums = temperature_weights(root.tree.arrays, root.id, 0.5, -5.0, 100.0, -1.0, 0.0, _ALL)
    w = list(_weights(chosen, sums).values())
    p = [root.p[i] ** 2 for i in range(3)]
    assert w == pytest.approx(p, rel=1e-5)


def test_searchmoves_limit_the_draw(hand_node) -> None:
    root = hand_node([0.4, 0.3, 0.2, 0.1], [(50, 0, 0.1), (30, 0, 0.0), (10, 0, -0.1)])
    allowed = np.array([0, 1, 1, 0], np.uint8)
    chosen, sums = temperature_weights(root.tree.arrays, root.id, 1.0, 0.0, 100.0, -1.0, 0.0, allowed)
    assert chosen == [1, 2]
    assert list(_weights(chosen, sums).values()) == pytest.approx([1.0, 1 / 3], abs=1e-6)


def test_draws_follow_the_weights(hand_node) -> None:
    # 20000 seeded draws against the formula: each share within 0.015 (about 5 standard errors)
    root = hand_node([0.4, 0.3, 0.2, 0.1], [(40, 0, 0.1), (30, 0, 0.0), (20, 0, -0.1), (10, 0, 0.0)])
    t = root.tree.arrays
    rng = np.random.default_rng(1234)
    for temperature in (1.0, 2.0, 0.5):
        counts = collections.Counter(
            pick_with_temperature(t, root.id, temperature, 0.0, 100.0, -1.0, 0.0, _ALL, rng)
            for _ in range(20000)
        )
        weights = np.array([(n / 40) ** (1 / temperature) for n in (40, 30, 20, 10)])
        expected = weights / weights.sum()
        for e in range(4):
            assert counts[e] / 20000 == pytest.approx(expected[e], abs=0.015), (temperature, e)


def test_temperature_zero_plays_the_best_move(make_search) -> None:
    limits = SearchLimits(nodes=150, smart_pruning=False)
    plain = make_search(params=SearchParams(overlap=False), limits=limits)
    plain.run()
    zero = make_search(params=SearchParams(overlap=False, temperature=0.0, random_seed=5), limits=limits)
    zero.run()
    assert plain.best_move() == zero.best_move()
    assert plain.best_move()[0] == plain.ranked_root_children()[0].move


def test_search_draws_its_move_once_and_by_visits(make_search) -> None:
    params = SearchParams(overlap=False, temperature=1.0, random_seed=7)
    s = make_search(params=params, limits=SearchLimits(nodes=300, smart_pruning=False))
    s.run()
    played = s.best_move()
    assert s.best_move() == played  # drawn once, when the search answered
    kids = s.ranked_root_children()
    visits = {c.move: c.n for c in kids}
    assert played[0] in visits and visits[played[0]] > 0
    # the same search drawn again and again: shares follow N / sum N at T = 1
    counts = collections.Counter(s._choose_final_move()[0] for _ in range(6000))
    total = sum(visits.values())
    for move, n in visits.items():
        assert counts[move] / 6000 == pytest.approx(n / total, abs=0.025), move
    # the ponder move is the best reply without temperature
    node = next(c for c in kids if c.move == played[0])
    if node.n > 1:
        assert played[1] is not None


def test_same_seed_same_move(make_search) -> None:
    moves = set()
    for _ in range(2):
        params = SearchParams(overlap=False, temperature=5.0, random_seed=11)
        s = make_search(params=params, limits=SearchLimits(nodes=100, smart_pruning=False))
        s.run()
        moves.add(s.best_move()[0])
    assert len(moves) == 1


def test_cutoff_move_makes_the_endgame_temperature_apply(make_search) -> None:
    # lc0's move number of "startpos moves e2e4" is 1: TempCutoffMove 2 already applies there
    params = SearchParams(overlap=False, temp_cutoff_move=2, temp_endgame=100.0, random_seed=3)
    first = make_search(params=params)
    second = make_search(moves=["e2e4"], params=params)
    assert first.temperature() == 0.0 and second.temperature() == 100.0
