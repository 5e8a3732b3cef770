"""``lc0py calibrate``: writes a verified calibration the residual FP8 path finds; refuses what it
cannot calibrate in one line (exit 2), writing nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lc0py.cli.main import main


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LC0PY_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _net(tmp_path: Path, preset: str, *extra: str) -> Path:
    path = tmp_path / f"{preset}.pb.gz"
    assert main(["make-net", "--preset", preset, *extra, "-o", str(path)]) == 0
    return path


def test_calibrate_writes_what_cuda_fp8_finds(
    tmp_path: Path, cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from lc0py.backends.gpu.fp8_calibration import find_calibration
    from lc0py.weights import load_network

    path = _net(tmp_path, "res-tiny")
    net = load_network(path)
    assert find_calibration(net) is None  # type: ignore[arg-type]
    capsys.readouterr()
    assert main(["calibrate", str(path), "--positions", "32"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"calibrate: {path}: 5 tower convolutions, 32 positions")
    cal = find_calibration(net)  # type: ignore[arg-type]
    assert cal is not None and cal.positions == 32 and str(cache) in out
    assert main(["calibrate", str(path), "--positions", "16", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["positions"] == 16 and doc["convolutions"] == 5 and doc["digest"] == cal.digest
    again = find_calibration(net)  # type: ignore[arg-type]
    assert again is not None and again.positions == 16  # rewritten in place


@pytest.mark.parametrize("case", ["attention", "positions", "missing"])
def test_calibrate_refuses_in_one_line(
    tmp_path: Path, cache: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    if case == "attention":
        args, want = [str(_net(tmp_path, "t82", "--layers", "1"))], "has an attention body"
    elif case == "positions":
        args, want = [str(_net(tmp_path, "res-tiny")), "--positions", "3"], "--positions 3 is out of range"
    else:
        args, want = [str(tmp_path / "nope.pb.gz")], "nope.pb.gz"
    capsys.readouterr()
    assert main(["calibrate", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("lc0py: ") and want in err and "\n" not in err
    assert not (cache / "fp8-calibration").exists() or not any((cache / "fp8-calibration").iterdir())
