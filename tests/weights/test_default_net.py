"""The default network: cache directory choice, one-time generation, regeneration when corrupt."""

from __future__ import annotations

from pathlib import Path

import pytest

from lc0py.weights import default_net


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
    inode = path.stat().st_ino  # a regeneration replaces the file (new inode); a hit only touches it
    default_net._verified.clear()  # a new process: verifies the digest, does not regenerate
    assert default_net.default_weights_path() == path
    assert path.stat().st_ino == inode and capsys.readouterr().err == ""
    assert [p.name for p in tiny_default.iterdir() if p.name.startswith(".")] == []  # no temp files left
    assert tiny_default.stat().st_mode & 0o777 == 0o700 and path.stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize("damage", ["truncate", "delete_record", "delete", "replace"])
def test_regenerated_when_corrupt(tiny_default: Path, capsys: pytest.CaptureFixture[str],
                                  damage: str) -> None:
    path = default_net.default_weights_path()
    good = path.read_bytes()
    default_net._verified.clear()
    if damage == "truncate":
        path.write_bytes(good[: len(good) // 2])
    elif damage == "delete_record":
        path.with_name(path.name + ".entry.json").unlink()
    elif damage == "replace":  # another valid net put in its place: not what was recorded
        from lc0py.weights import random_network, save_network

        save_network(random_network("tiny", seed=99, layers=1), path)
    else:
        path.unlink()
    capsys.readouterr()
    assert default_net.default_weights_path() == path
    assert "generating" in capsys.readouterr().err
    assert path.read_bytes() == good  # deterministic generation
    assert default_net.is_valid(path)


def test_symlink_planted_in_the_cache_is_never_followed(tiny_default: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    from lc0py.errors import Lc0pyError

    tiny_default.mkdir(parents=True, mode=0o700)
    victim = tiny_default.parent / "victim.txt"
    victim.write_text("precious")
    (tiny_default / default_net.FILE_NAME).symlink_to(victim)
    with pytest.raises(Lc0pyError, match="cannot write the default network"):
        default_net.default_weights_path()
    assert victim.read_text() == "precious"
    assert [p.name for p in tiny_default.iterdir() if p.name.endswith(".tmp")] == []
