"""One cache-folder resolver and verified cache entries (issue 9 item 5, issue 13 item 4)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lc0py.backends.gpu import tuning
from lc0py.backends.onnx import cache as onnx_cache
from lc0py.gpu import compile_cache
from lc0py.storage.cache import EntryStore, cache_folder, cache_root, prepare_folder
from lc0py.weights import default_net


def test_every_cache_honours_lc0py_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("LC0PY_KERNEL_CACHE", "LC0PY_ONNX_CACHE", "LC0PY_TUNED_DIR", "XDG_CACHE_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("LC0PY_CACHE_DIR", str(tmp_path / "root"))
    root = tmp_path / "root"
    assert cache_root() == root and default_net.cache_dir() == root
    assert compile_cache.cache_folder() == root / "kernels"
    assert onnx_cache.cache_folder() == root / "onnx"
    assert tuning.tuned_folder() == root / "tuned"
    monkeypatch.delenv("LC0PY_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert compile_cache.cache_folder() == tmp_path / "xdg" / "lc0py" / "kernels"
    monkeypatch.setenv("LC0PY_TUNED_DIR", "off")
    assert tuning.tuned_folder() is None and cache_folder("x", "LC0PY_TUNED_DIR") is None


def test_folder_is_created_private_and_foreign_ones_are_refused(tmp_path: Path) -> None:
    folder = prepare_folder(tmp_path / "a" / "b")
    assert folder.stat().st_mode & 0o777 == 0o700
    open_folder = tmp_path / "open"
    open_folder.mkdir()
    os.chmod(open_folder, 0o775)
    store = EntryStore(open_folder, "kernel")
    assert store.store("x.bin", b"data", "in") is None and store.load("x.bin", "in") is None
    assert list(open_folder.iterdir()) == []


def test_entries_round_trip_and_refuse_tampering(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = EntryStore(tmp_path, "kernel", max_entries=2)
    path = store.store("a.bin", b"alpha", "inputs-a")
    assert path is not None and path.stat().st_mode & 0o777 == 0o600
    assert store.load("a.bin", "inputs-a") == b"alpha"
    assert store.load("a.bin", "inputs-b") is None  # same name, other inputs: not this entry
    assert store.load("a.bin", "inputs-a") is None  # ... and it was dropped
    store.store("a.bin", b"alpha", "inputs-a")
    path.write_bytes(b"alphX")
    with caplog.at_level("WARNING", logger="lc0py.cache"):
        assert store.load("a.bin", "inputs-a") is None
    assert [r.getMessage() for r in caplog.records if "failed verification" in r.getMessage()]
    foreign = tmp_path / "b.bin"
    foreign.write_bytes(b"planted")  # no record: never trusted, never deleted by eviction
    assert store.load("b.bin", "x") is None and foreign.exists()
    for name in ("c.bin", "d.bin", "e.bin"):
        store.store(name, name.encode(), name)
    assert sorted(store.entries()) == ["d.bin", "e.bin"] and foreign.exists()
