"""Seeded fuzzing of the text inputs: FEN/move strings (eval lines, UCI ``position``) and option
strings (UCI ``setoption``/flags, ``--backend-opts``). Each case: a valid result or one
``Lc0pyError`` line, never another exception; accepted values are finite and in range."""

from __future__ import annotations

import math
import random

import chess
import pytest

from lc0py.backends.options import BackendOptions
from lc0py.backends.registry import create_backend
from lc0py.errors import Lc0pyError
from lc0py.tools.positions import parse_position_line
from lc0py.uci.options import Options
from tests.fuzz.fuzzutil import SLOW_FACTOR, failure, tally_cases

FEN_CASES = 2000
OPTION_CASES = 3000
BACKEND_OPTION_CASES = 1000

SEED_FENS = [
    chess.STARTING_FEN,
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
    "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
    "rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8",
    "4k3/8/8/8/8/8/4P3/4K3 w - - 5 39",
    "8/8/8/8/8/8/6k1/4K2R w K - 0 1",
]
FEN_ALPHABET = "pnbrqkPNBRQK12345678/ wb-KQkqabcdefgh0123456789"
JUNK = ["", " ", "|", "||", "#", "\x00", "\u00e9", "startpos", "moves", "fen", "nan", "-1", "e2e4",
        "e7e8q", "e1g1", "a1a1", "0000", "e2e9", "z9z9", "e7e8k", "\ufeff", "9" * 40]


def _mutate_text(rng: random.Random, text: str, alphabet: str) -> str:
    chars = list(text)
    for _ in range(rng.randint(0, 4)):
        op = rng.randrange(4)
        at = rng.randrange(len(chars) + 1)
        if op == 0 and chars:
            del chars[min(at, len(chars) - 1)]
        elif op == 1:
            chars.insert(at, rng.choice(alphabet))
        elif op == 2 and chars:
            chars[min(at, len(chars) - 1)] = rng.choice(alphabet)
        else:
            chars.insert(at, rng.choice(JUNK))
    return "".join(chars)


def _random_moves(rng: random.Random, fen: str) -> list[str]:
    try:
        board = chess.Board(fen)
    except ValueError:
        board = chess.Board()
    moves = []
    for _ in range(rng.randint(0, 12)):
        legal = list(board.legal_moves)
        if not legal or rng.random() < 0.15:
            moves.append(rng.choice(JUNK[9:]) or "e2e4")
            break
        move = rng.choice(legal)
        moves.append(move.uci())
        board.push(move)
    return moves


def _fen_case(seed: int) -> str:
    rng = random.Random(seed)
    fen = rng.choice(SEED_FENS)
    if rng.random() < 0.7:
        fen = _mutate_text(rng, fen, FEN_ALPHABET)
    moves = _random_moves(rng, fen)
    line = f"{fen} | {' '.join(moves)}" if moves or rng.random() < 0.5 else fen
    if rng.random() < 0.2:
        line = _mutate_text(rng, line, FEN_ALPHABET + "|#")
    try:
        spec = parse_position_line(line, f"fuzz:{seed}")
        if spec is None:
            return "skipped"
        history = spec.history()
        planes = history.encode(3)
        assert planes is not None
        board = history.board
        assert not board.was_into_check(), failure("positions", seed, f"{line!r}: accepted, king en prise")
        return "accepted"
    except Lc0pyError as exc:
        assert "\n" not in str(exc)
        return "refused"
    except Exception as exc:
        raise AssertionError(failure("positions", seed, f"{line!r}: {type(exc).__name__}: {exc}")) from exc


def _run_fens(base: int, count: int) -> None:
    seen = tally_cases(base, count, _fen_case)
    print(f"FEN/move fuzz: {count} cases from base seed {base}: {seen}")


NUMBERS = ["0", "1", "-1", "1.5", "nan", "NaN", "inf", "-inf", "+inf", "1e309", "-1e309", "1e-320",
           "2147483648", "-9223372036854775809", "99999999999999999999", "0x10", "1_000", " 3 ", "",
           "true", "false", "on", "\u0663", "1e5", "5e-1", "--1", "3.", ".5", "<empty>", "\x00"]


def _option_text(rng: random.Random) -> str:
    if rng.random() < 0.6:
        return rng.choice(NUMBERS)
    return _mutate_text(rng, rng.choice(NUMBERS + JUNK), "0123456789.-+eEnaifNI ")


def _option_case(seed: int, options: Options) -> str:
    rng = random.Random(seed)
    spec = rng.choice(options.specs)
    text = _option_text(rng)
    before = options[spec.name]
    try:
        options.set(spec.name, text)
    except Lc0pyError as exc:
        assert "\n" not in str(exc) and spec.name in str(exc), failure("option", seed, repr(str(exc)))
        assert options[spec.name] == before, failure("option", seed, f"{spec.name} changed on error")
        return "refused"
    except Exception as exc:
        raise AssertionError(failure("option", seed, f"{spec.name}={text!r}: {type(exc).__name__}: {exc}")) \
            from exc
    value = options[spec.name]
    if spec.kind in ("spin", "float"):
        ok = math.isfinite(value) and (spec.lo is None or value >= spec.lo)
        ok = ok and (spec.hi is None or value <= spec.hi)
        assert ok, failure("option", seed, f"{spec.name}={text!r} accepted as {value!r}")
    options.set(spec.name, str(before) if spec.kind != "check" else ("true" if before else "false"))
    return "accepted"


def _run_options(base: int, count: int) -> None:
    options = Options()
    seen = tally_cases(base, count, lambda seed: _option_case(seed, options))
    params = options.search_params()
    assert all(math.isfinite(v) for v in vars(params).values() if isinstance(v, float))
    print(f"option fuzz: {count} cases from base seed {base}: {seen}")


BACKEND_KEYS = ["seed", "delay_ms", "input_format", "wdl", "moves_left", "uniform", "bogus", "", "="]


def _backend_case(seed: int) -> str:
    rng = random.Random(seed)
    items = []
    for _ in range(rng.randint(0, 3)):
        key = rng.choice(BACKEND_KEYS)
        delays = ["0", "0.5", "nan", "inf", "-1", "1e9"]
        value = _option_text(rng) if key != "delay_ms" else rng.choice(delays)
        items.append(f"{key}={value}" if rng.random() < 0.9 else key)
    text = rng.choice([",", ", ", ",,"]).join(items)
    try:
        BackendOptions.parse(text)
        backend = create_backend("random", None, text)
        assert math.isfinite(backend.delay_ms) and 0 <= backend.delay_ms <= 60_000  # type: ignore[attr-defined]
        backend.close()
        return "accepted"
    except Lc0pyError as exc:
        assert "\n" not in str(exc)
        return "refused"
    except Exception as exc:
        detail = f"{text!r}: {type(exc).__name__}: {exc}"
        raise AssertionError(failure("backend options", seed, detail)) from exc


def _run_backend_options(base: int, count: int) -> None:
    seen = tally_cases(base, count, _backend_case)
    print(f"backend-option fuzz: {count} cases from base seed {base}: {seen}")


def test_fen_and_move_fuzz() -> None:
    _run_fens(1, FEN_CASES)


def test_option_fuzz() -> None:
    _run_options(2, OPTION_CASES)


def test_backend_option_fuzz() -> None:
    _run_backend_options(3, BACKEND_OPTION_CASES)


@pytest.mark.slow
def test_input_fuzz_long() -> None:
    _run_fens(11, FEN_CASES * SLOW_FACTOR)
    _run_options(12, OPTION_CASES * SLOW_FACTOR)
    _run_backend_options(13, BACKEND_OPTION_CASES * SLOW_FACTOR)
