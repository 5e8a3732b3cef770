"""One rule for ``--weights`` in every command (``lc0py.tools.weights_choice``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lc0py.backends import registry
from lc0py.cli.main import WEIGHTS_RULE, main
from lc0py.errors import UsageError
from lc0py.tools.weights_choice import resolve_weights
from lc0py.weights import discover, random_network, save_network


@pytest.fixture(scope="module")
def tiny_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("nets") / "tiny.pb.gz"
    save_network(random_network("tiny", seed=44), path)
    return path


@pytest.fixture
def nothing_found(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No net in lc0's folders; the built-in random net stands in for the (slow) T82 one."""
    monkeypatch.setattr(discover, "discover_weights_file", lambda program_dir=None: None)
    stand_in = tmp_path / "default-t82.pb.gz"
    save_network(random_network("tiny", seed=45), stand_in)
    monkeypatch.setattr(registry, "default_weights", lambda: stand_in)
    return stand_in


def test_the_rule(nothing_found: Path, tiny_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a file is that file; <random> is the built-in net in every command
    assert resolve_weights(str(tiny_path), "eval", speed_tool=False) == tiny_path
    assert resolve_weights("<random>", "eval", speed_tool=False) == nothing_found
    assert resolve_weights("<random>", "benchmark", speed_tool=True) == nothing_found
    # nothing given, nothing found: the speed tools go on with <random>, the others stop
    assert resolve_weights(None, "backendbench", speed_tool=True) == nothing_found
    assert resolve_weights("<autodiscover>", "benchmark", speed_tool=True) == nothing_found
    with pytest.raises(UsageError, match=r"eval: no network: give --weights FILE .*<random>"):
        resolve_weights(None, "eval", speed_tool=False)
    # a backend without a network takes none
    assert resolve_weights(None, "benchmark", speed_tool=True, backend="random") is None
    # lc0's folders have a net: every command uses it
    monkeypatch.setattr(discover, "discover_weights_file", lambda program_dir=None: str(tiny_path))
    assert resolve_weights(None, "eval", speed_tool=False) == tiny_path
    assert resolve_weights(None, "backendbench", speed_tool=True) == tiny_path


def test_eval_and_describenet_follow_it(nothing_found: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "-b", "numpy"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no network" in err[0] and "lc0's folders" in err[0]
    assert main(["eval", "-b", "numpy", "-w", "<random>", "--json"]) == 0  # advertised, so accepted
    assert len(capsys.readouterr().out.splitlines()) == 1
    assert main(["describenet", "-w", "<random>"]) == 0
    assert "Weights" in capsys.readouterr().out


def test_describenet_positional_and_json(tiny_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["describenet", str(tiny_path)]) == 0
    text = capsys.readouterr().out
    assert "Encoders: 2" in text.replace("  ", "")
    assert main(["describenet", str(tiny_path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["file"] == str(tiny_path)
    assert doc["Weights"]["Encoders"] == "2" and doc["Format"]["Weights encoding"] == "LINEAR16"
    assert main(["describenet", str(tiny_path), "-w", "/other.pb.gz"]) == 2
    assert "two networks" in capsys.readouterr().err


def test_the_rule_is_in_help(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["--help"], ["benchmark", "--help"], ["eval", "--help"]):
        with pytest.raises(SystemExit):
            main(argv)
        out = " ".join(capsys.readouterr().out.split())
        assert " ".join(WEIGHTS_RULE.split()) in out, argv
    with pytest.raises(SystemExit):
        main(["backendbench", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "built-in T82-shaped net (random weights)" not in out  # no default it does not use


def test_export_onnx_follows_it(nothing_found: Path, tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("onnx")
    out = tmp_path / "random.onnx"
    assert main(["export-onnx", "-w", "<random>", "-o", str(out)]) == 0
    assert out.stat().st_size > 1000
    assert main(["export-onnx", "-w", "<autodiscover>", "-o", str(tmp_path / "none.onnx")]) == 2
    assert "no network found in lc0's folders" in capsys.readouterr().err


def test_verify_takes_autodiscover(nothing_found: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "-w", "<autodiscover>", "-b", "numpy"]) == 2
    assert "verify: no network" in capsys.readouterr().err
