"""The on-disk model cache of the ONNX Runtime backends: location, key, hit, rebuild, opt-out."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx", reason="onnx not installed (pip install 'lc0py[onnx]')")
pytest.importorskip("onnxruntime", reason="onnxruntime not installed (pip install 'lc0py[onnx]')")

from lc0py.backends.onnx import cache  # noqa: E402
from lc0py.backends.registry import create_backend  # noqa: E402
from lc0py.storage.cache import EntryStore  # noqa: E402
from lc0py.weights import random_network  # noqa: E402
from tests.backends.conformance import random_batch  # noqa: E402


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private cache folder, with the size threshold lowered so the tiny net is cached."""
    folder = tmp_path / "onnx-cache"
    monkeypatch.setenv(cache.ENV_CACHE, str(folder))
    monkeypatch.setattr(cache, "MIN_PARAMETERS", 0)
    return folder


def test_folder_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in (cache.ENV_CACHE, "LC0PY_CACHE_DIR", "XDG_CACHE_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.cache_folder() == tmp_path / "home" / ".cache" / "lc0py" / "onnx"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_folder() == tmp_path / "xdg" / "lc0py" / "onnx"
    monkeypatch.setenv("LC0PY_CACHE_DIR", str(tmp_path / "lc0py"))
    assert cache.cache_folder() == tmp_path / "lc0py" / "onnx"
    monkeypatch.setenv(cache.ENV_CACHE, str(tmp_path / "models"))
    assert cache.cache_folder() == tmp_path / "models"
    for off in ("off", "0", "", "none"):
        monkeypatch.setenv(cache.ENV_CACHE, off)
        assert cache.cache_folder() is None


def test_key_follows_weights_and_settings() -> None:
    a, b = random_network("tiny", seed=1), random_network("tiny", seed=1)
    assert cache.model_key(a, fp16=False) == cache.model_key(b, fp16=False)
    assert cache.model_key(a, fp16=False) != cache.model_key(a, fp16=True)
    b.encoders[1].ffn2.w[3, 5] += 1e-3
    assert cache.model_key(a, fp16=False) != cache.model_key(b, fp16=False)
    c = random_network("tiny", seed=1)
    c.encoders[0].ln1.eps = 1e-3
    assert cache.model_key(a) != cache.model_key(c)


def test_second_backend_hits_the_cache(cache_dir: Path) -> None:
    net = random_network("tiny", seed=2)
    first = create_backend("onnx-cpu", net, "")
    assert not first.cache_hit  # type: ignore[attr-defined]
    files = list(cache_dir.glob("*.onnx"))
    assert len(files) == 1 and not list(cache_dir.glob("*.tmp"))
    second = create_backend("onnx-cpu", net, "")
    assert second.cache_hit  # type: ignore[attr-defined]
    batch = random_batch(3, second.info.input_format, seed=9)
    np.testing.assert_array_equal(first.evaluate(batch).policy, second.evaluate(batch).policy)
    third = create_backend("onnx-cpu", net, "fp16=on")  # other settings: another file
    assert not third.cache_hit and len(list(cache_dir.glob("*.onnx"))) == 2  # type: ignore[attr-defined]


def test_corrupt_cache_file_is_rebuilt(cache_dir: Path) -> None:
    net = random_network("tiny", seed=3)
    create_backend("onnx-cpu", net, "")
    (path,) = cache_dir.glob("*.onnx")
    path.write_bytes(b"not an onnx model")
    backend = create_backend("onnx-cpu", net, "")
    assert not backend.cache_hit  # type: ignore[attr-defined]
    assert path.stat().st_size > 1000
    assert create_backend("onnx-cpu", net, "").cache_hit  # type: ignore[attr-defined]


def test_small_nets_and_disabled_cache_write_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "c"
    monkeypatch.setenv(cache.ENV_CACHE, str(folder))
    create_backend("onnx-cpu", random_network("tiny", seed=4), "")  # below MIN_PARAMETERS
    assert not folder.exists()
    monkeypatch.setattr(cache, "MIN_PARAMETERS", 0)
    monkeypatch.setenv(cache.ENV_CACHE, "off")
    create_backend("onnx-cpu", random_network("tiny", seed=4), "")
    assert not folder.exists()


def test_unwritable_cache_is_not_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder should be")
    monkeypatch.setenv(cache.ENV_CACHE, str(blocker / "onnx"))
    monkeypatch.setattr(cache, "MIN_PARAMETERS", 0)
    backend = create_backend("onnx-cpu", random_network("tiny", seed=5), "")
    assert not backend.cache_hit  # type: ignore[attr-defined]
    assert len(backend.evaluate(random_batch(2, backend.info.input_format, seed=1))) == 2


def test_keeps_the_most_recently_used_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    entries = EntryStore(tmp_path, "onnx")  # unbounded: nothing evicted while filling
    names = [f"model-{i}.onnx" for i in range(5)]
    for i, name in enumerate(names):
        entries.store(name, b"x", inputs=f"key{i}")
        os.utime(tmp_path / name, (1000 + i, 1000 + i))  # distinct, increasing "last used" times
    foreign = tmp_path / "model-mine.onnx"  # the user's own file in a folder they chose
    foreign.write_bytes(b"mine")
    os.utime(foreign, (1, 1))
    entries.touch(names[0])  # used again: now the newest
    monkeypatch.setattr(cache, "MAX_FILES", 3)
    entries = cache.store(tmp_path)
    assert entries.store("model-new.onnx", b"y", inputs="new")
    left = sorted(p.name for p in tmp_path.glob("model-*.onnx"))
    assert left == ["model-0.onnx", "model-4.onnx", "model-mine.onnx", "model-new.onnx"]
    assert foreign.read_bytes() == b"mine"


def test_swapped_cache_files_are_refused_and_rebuilt(cache_dir: Path,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    nets = [random_network("tiny", seed=s) for s in (6, 7)]
    batch = random_batch(2, 1, seed=3)
    fresh = [create_backend("onnx-cpu", n, "").evaluate(batch).policy for n in nets]
    a, b = (cache.cache_entry(n, fp16=False, opset=17, attention="plain", wdl_softmax=False) for n in nets)
    assert a is not None and b is not None and a.path.is_file() and b.path.is_file()
    data_a, data_b = a.path.read_bytes(), b.path.read_bytes()
    a.path.write_bytes(data_b)  # swap the two models (records stay): each now holds the other net
    b.path.write_bytes(data_a)
    with caplog.at_level("WARNING", logger="lc0py.cache"):
        again = [create_backend("onnx-cpu", n, "") for n in nets]
    assert not any(x.cache_hit for x in again)  # type: ignore[attr-defined]
    assert sum("failed verification" in r.getMessage() for r in caplog.records) == 2
    for backend, expected in zip(again, fresh, strict=True):
        np.testing.assert_array_equal(backend.evaluate(batch).policy, expected)
    assert all(create_backend("onnx-cpu", n, "").cache_hit for n in nets)  # type: ignore[attr-defined]
