"""On-disk cache of exported ONNX models, keyed by network content and export settings.

Why: for a T82-sized net (~380 MB of float32 weights) exporting, serialising and handing the bytes
to ONNX Runtime took 7-12 s on the shared 2-core machine, while a session from a cached file took
1.4-1.7 s (docs/performance.md). Small nets build in milliseconds, so only nets with at least
``MIN_PARAMETERS`` weights are cached (tests with tiny nets never touch the disk).

Where: ``$LC0PY_ONNX_CACHE`` if set (``off``/``0``/``none``/empty disables the cache), else
``onnx/`` under ``$LC0PY_CACHE_DIR``, ``$XDG_CACHE_HOME/lc0py`` or ``~/.cache/lc0py``. Files are
written atomically (temporary file + ``os.replace``); a file that ONNX Runtime cannot load is
deleted and rebuilt by the caller. The key covers the weights (every array's dtype, shape and
bytes), every scalar of the ``Network``, the export settings and the exporter's own source, so a
change to any of them is a different file. The folder keeps the ``MAX_FILES`` most recently
used models (a T82 model is ~380 MB in float32); older ones are deleted when a new one is stored.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger("lc0py.backends")

ENV_CACHE = "LC0PY_ONNX_CACHE"
MIN_PARAMETERS = 2_000_000
MAX_FILES = 4
FORMAT_VERSION = 1
_OFF = {"", "0", "off", "none", "false", "no"}
_SOURCES = ("export.py", "export_residual.py", "graph.py")  # the exporter: a change here must miss the cache


def cache_folder() -> Path | None:
    """The folder holding cached models, or ``None`` when caching is disabled."""
    env = os.environ.get(ENV_CACHE)
    if env is not None:
        return None if env.strip().lower() in _OFF else Path(env).expanduser()
    base = os.environ.get("LC0PY_CACHE_DIR")
    if base:
        return Path(base).expanduser() / "onnx"
    xdg = os.environ.get("XDG_CACHE_HOME")
    root = Path(xdg).expanduser() / "lc0py" if xdg else Path.home() / ".cache" / "lc0py"
    return root / "onnx"


def _update(h: Any, obj: object) -> None:
    """Feed ``obj`` (dataclasses, lists, arrays, scalars) into hash ``h`` unambiguously."""
    if isinstance(obj, np.ndarray):
        h.update(f"A{obj.dtype.str}{obj.shape}".encode())
        h.update(np.ascontiguousarray(obj).data)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        h.update(f"D{type(obj).__name__}(".encode())
        for f in dataclasses.fields(obj):
            if f.name == "extra":  # other heads of a multi-head net: not part of this model
                continue
            h.update(f.name.encode() + b"=")
            _update(h, getattr(obj, f.name))
        h.update(b")")
    elif isinstance(obj, list | tuple):
        h.update(f"L{len(obj)}[".encode())
        for item in obj:
            _update(h, item)
        h.update(b"]")
    else:
        h.update(f"S{obj!r};".encode())


def model_key(network: object, **settings: object) -> str:
    """Hex digest naming the model exported from ``network`` with ``settings``."""
    h = hashlib.sha256(f"lc0py-onnx-cache-v{FORMAT_VERSION}".encode())
    here = Path(__file__).parent
    for name in _SOURCES:
        h.update((here / name).read_bytes())
    for key in sorted(settings):
        h.update(f"{key}={settings[key]!r};".encode())
    _update(h, network)
    return h.hexdigest()


def cached_path(network: Any, **settings: object) -> Path | None:
    """Where the model for ``network`` and ``settings`` lives (exists or not), or ``None``.

    ``None`` when caching is disabled or the net is too small to be worth it.
    """
    folder = cache_folder()
    if folder is None or network.parameter_count() < MIN_PARAMETERS:
        return None
    return folder / f"model-{model_key(network, **settings)[:40]}.onnx"


def touch(path: Path) -> None:
    """Mark a cached model as just used (eviction removes the least recently used)."""
    try:
        os.utime(path)
    except OSError:
        pass


def _evict(folder: Path, keep: Path) -> None:
    models = sorted(folder.glob("model-*.onnx"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in [m for m in models if m != keep][MAX_FILES - 1 :]:
        try:
            old.unlink()
            log.info("onnx cache: removed the least recently used %s", old.name)
        except OSError:
            pass


def store(path: Path, data: bytes) -> bool:
    """Write ``data`` to ``path`` atomically, then evict beyond ``MAX_FILES``.

    Returns ``False`` (logged, not raised) if writing fails: the cache is an optimisation.
    """
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
        _evict(path.parent, keep=path)
        return True
    except OSError as exc:
        log.info("onnx cache: could not write %s (%s); continuing without it", path, exc)
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        return False
