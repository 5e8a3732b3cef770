"""``lc0py.chess.testing.random_games``: the one random-position generator."""

from __future__ import annotations

import chess

from lc0py.chess.testing import PLAYOUT_FENS, random_games


def test_deterministic_unfinished_and_varied() -> None:
    games = random_games(40, seed=7)
    again = random_games(40, seed=7)
    assert len(games) == 40 and [g.board.fen() for g in games] == [g.board.fen() for g in again]
    assert [g.board.fen() for g in random_games(40, seed=8)] != [g.board.fen() for g in games]
    for g in games:
        assert not g.board.is_game_over(claim_draw=False) and any(g.board.legal_moves)
    roots = {g.board.root().fen() for g in games}
    expected = {chess.STARTING_FEN if f is None else chess.Board(f).fen() for f in PLAYOUT_FENS}
    assert roots == expected  # every start position is used
    assert len({len(g.board.move_stack) for g in games}) > 5  # varied game lengths


def test_max_plies_and_start_fens() -> None:
    games = random_games(10, seed=1, max_plies=3, start_fens=(None,))
    assert all(len(g.board.move_stack) < 3 and g.board.root() == chess.Board() for g in games)
