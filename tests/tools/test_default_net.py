"""The default network: cache directory choice, one-time generation, regeneration when corrupt."""

from __future__ import annotations

from pathlib import Path

import pytest

from lc0py.tools import default_net


@pytest.fixture()
def tiny_default(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Use the tiny preset (the real one is T82: ~190 MB) and an empty cache."""
    monkeypatch.setattr(default_net, "PRESET", "tiny")
    monkeypatch.setattr(default_net, "_verified", set())
    monkeypatch.setenv("LC0PY_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_cache_dir_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LC0PY_CACHE_DIR", str(tmp_path / "a"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert default_net.cache_dir() == tmp_path / "a"
    monkeypatch.delenv("LC0PY_CACHE_DIR")
    assert default_net.cache_dir() == tmp_path / "x" / "lc0py"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_net.cache_dir() == tmp_path / "home" / ".cache" / "lc0py"


def test_generated_once_then_reused(tiny_default: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from lc0py.weights import load_network

    path = default_net.default_weights_path()
    assert path.parent == tiny_default and path.is_file()
    err = capsys.readouterr().err
    assert "generating the default network" in err and "ready" in err
    assert load_network(path).num_layers == 2
    mtime = path.stat().st_mtime_ns
    default_net._verified.clear()  # a new process: verifies the digest, does not regenerate
    assert default_net.default_weights_path() == path
    assert path.stat().st_mtime_ns == mtime and capsys.readouterr().err == ""
    assert [p.name for p in tiny_default.iterdir() if p.name.startswith(".")] == []  # no temp files left


@pytest.mark.parametrize("damage", ["truncate", "delete_sidecar", "delete"])
def test_regenerated_when_corrupt(
    tiny_default: Path, capsys: pytest.CaptureFixture[str], damage: str
) -> None:
    path = default_net.default_weights_path()
    good = path.read_bytes()
    default_net._verified.clear()
    if damage == "truncate":
        path.write_bytes(good[: len(good) // 2])
    elif damage == "delete_sidecar":
        path.with_name(path.name + ".sha256").unlink()
    else:
        path.unlink()
    capsys.readouterr()
    assert default_net.default_weights_path() == path
    assert "generating" in capsys.readouterr().err
    assert path.read_bytes() == good  # deterministic generation
    assert default_net.is_valid(path)
