"""``lc0py eval``: legal-move policy, JSON lines, positions files, and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import chess
import pytest

from lc0py.cli.main import main
from lc0py.weights import random_network, save_network


@pytest.fixture(scope="module")
def tiny_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("nets") / "tiny.pb.gz"
    save_network(random_network("tiny", seed=41), path)
    return path


@pytest.fixture(scope="module")
def classical_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("nets") / "classical.pb.gz"
    save_network(random_network("tiny", seed=42, wdl=False, moves_left=False, input_format=1), path)
    return path


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict]:  # type: ignore[type-arg]
    assert main(["eval", *argv, "--json"]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_startpos_policy_is_legal_and_sums_to_one(tiny_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    (obj,) = run_json(capsys, "-w", str(tiny_path))
    legal = {m.uci() for m in chess.Board().legal_moves}
    assert set(obj["policy"]) == legal
    assert abs(sum(obj["policy"].values()) - 1) < 1e-4
    assert abs(sum(obj["wdl"]) - 1) < 1e-4
    assert abs(obj["q"] - (obj["wdl"][0] - obj["wdl"][2])) < 1e-5
    assert obj["mlh"] is not None and obj["mlh"] >= 0
    assert obj["fen"] == chess.STARTING_FEN and obj["moves"] == []
    probs = list(obj["policy"].values())
    assert probs == sorted(probs, reverse=True)


def test_human_output(tiny_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "-w", str(tiny_path), "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "Position 1:" in out and "Q " in out and "MLH" in out
    assert "(20 legal moves, 17 not shown)" in out


def test_castling_uci_and_moves(tiny_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (obj,) = run_json(capsys, "-w", str(tiny_path), "--fen", "r3k2r/8/8/8/8/8/8/R3K2R b KQkq - 0 1")
    assert "e8g8" in obj["policy"] and "e8c8" in obj["policy"] and "e8h8" not in obj["policy"]
    (obj,) = run_json(capsys, "-w", str(tiny_path), "--moves", "e2e4", "e7e5", "--top", "2")
    assert obj["moves"] == ["e2e4", "e7e5"] and len(obj["policy"]) == 2


def test_positions_file(tiny_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "pos.txt"
    f.write_text("startpos | e2e4\n\n# comment\n8/P7/8/8/8/8/8/k6K w - - 0 1\n"
                 "7k/5Q2/6K1/8/8/8/8/8 b - - 0 1 |\n")
    objs = run_json(capsys, "-w", str(tiny_path), "--positions", str(f))
    assert [o["moves"] for o in objs] == [["e2e4"], [], []]
    assert "a7a8q" in objs[1]["policy"] and "a7a8n" in objs[1]["policy"]
    assert objs[2]["policy"] == {}  # stalemate: no legal moves


def test_classical_net(classical_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (obj,) = run_json(capsys, "-w", str(classical_path))
    assert obj["mlh"] is None and obj["wdl"][1] == 0


def test_matches_reference(tiny_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Probabilities are the softmax of the reference logits over the legal moves."""
    import numpy as np

    from lc0py.chess import PositionHistory, encode_batch, legal_moves_with_indices
    from lc0py.model import forward
    from lc0py.weights import load_network

    (obj,) = run_json(capsys, "-w", str(tiny_path), "--moves", "d2d4", "--backend", "numpy",
                      "--backend-opts", "precision=fp64")
    net = load_network(tiny_path)
    hist = PositionHistory.from_fen(None, ["d2d4"])
    enc = hist.encode(net.format.input)
    logits = forward(net, encode_batch([enc]).dense(np.float64), np.float64).policy[0]
    moves, idx = legal_moves_with_indices(hist.board, enc.transform)
    p = np.exp(logits[idx] - logits[idx].max())
    p /= p.sum()
    for m, prob in zip(moves, p, strict=True):
        assert abs(obj["policy"][m.uci()] - prob) < 1e-5


BAD_LINES = [
    ("nonsense fen | e2e4\n", "pos.txt:1"),
    ("startpos | e2e5\n", "pos.txt:1: illegal move 'e2e5'"),
    ("\nstartpos | e2e4 | e7e5\n", "pos.txt:2"),
    (" | e2e4\n", "pos.txt:1: missing FEN"),
    ("# only a comment\n", "no positions"),
]


@pytest.mark.parametrize("text,message", BAD_LINES)
def test_bad_positions_file(tiny_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                            text: str, message: str) -> None:
    f = tmp_path / "pos.txt"
    f.write_text(text)
    assert main(["eval", "-w", str(tiny_path), "--positions", str(f)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("lc0py: ") and message in err


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--fen", "8/8/8/8/8/8/8/8 w - - 0 1"], "--fen"),
        (["--fen", "not a fen"], "bad FEN"),
        (["--moves", "e2e4", "e2e4"], "illegal move 'e2e4'"),
        (["--moves", "zz"], "illegal move 'zz'"),
        (["--positions", "/nonexistent/pos.txt"], "no such file"),
        (["--positions", "x.txt", "--fen", "startpos"], "cannot be combined"),
        (["--top", "0"], "--top"),
        (["--top", "x"], "--top"),
        (["--backend", "nope"], "unknown backend"),
        (["--backend", "numpy", "--backend-opts", "precision=fp16"], "precision"),
    ],
)
def test_bad_arguments(tiny_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
                       message: str) -> None:
    assert main(["eval", "-w", str(tiny_path), *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("lc0py: ") and message in err


def test_missing_or_corrupt_weights(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "-w", str(tmp_path / "missing.pb.gz")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such weights file" in err
    bad = tmp_path / "bad.pb.gz"
    bad.write_bytes(b"\x1f\x8b garbage")
    assert main(["eval", "-w", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("lc0py: ")
