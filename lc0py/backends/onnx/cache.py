"""On-disk cache of exported ONNX models, keyed by network content and export settings.

Why: for a T82-sized net (~380 MB of float32 weights) exporting, serialising and handing the bytes
to ONNX Runtime took 7-12 s on the shared 2-core machine, while a session from a cached file took
1.4-1.7 s (docs/performance.md). Small nets build in milliseconds, so only nets with at least
``MIN_PARAMETERS`` weights are cached (tests with tiny nets never touch the disk).

Where: ``$LC0PY_ONNX_CACHE`` if set (``off``/``0``/``none``/empty disables the cache), else
``onnx/`` under the lc0py cache root (``lc0py.storage.cache``: ``$LC0PY_CACHE_DIR`` or the
platform's user cache folder). Entries go through ``storage.cache.EntryStore``: written
atomically with a record of their SHA-256 and of the key they were built from, verified (hashed)
before a session is opened from them, dropped and rebuilt when they do not match (a swapped or
edited file is never used). The key covers the weights (every array's dtype, shape and bytes),
every scalar of the ``Network``, the export settings and the exporter's own source, so a change to
any of them is a different file. The folder keeps the ``MAX_FILES`` most recently used models it
wrote (a T82 model is ~380 MB in float32); files it did not write are never deleted.
"""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path
from typing import Any

import numpy as np

from lc0py.storage import cache as storage_cache

ENV_CACHE = "LC0PY_ONNX_CACHE"
MIN_PARAMETERS = 2_000_000
MAX_FILES = 4
FORMAT_VERSION = 1
_SOURCES = ("export.py", "export_residual.py", "graph.py")  # the exporter: a change here must miss the cache


def cache_folder() -> Path | None:
    """The folder holding cached models, or ``None`` when caching is disabled."""
    return storage_cache.cache_folder("onnx", ENV_CACHE)


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


def cache_entry(network: Any, **settings: object) -> CacheEntry | None:
    """The cache entry for ``network`` and ``settings``, or ``None``.

    ``None`` when caching is disabled or the net is too small to be worth it.
    """
    folder = cache_folder()
    if folder is None or network.parameter_count() < MIN_PARAMETERS:
        return None
    return CacheEntry(store(folder), model_key(network, **settings))


class CacheEntry:
    """One model in the cache: ``model-<key[:40]>.onnx`` plus its record (key = inputs digest)."""

    def __init__(self, entries: storage_cache.EntryStore, key: str) -> None:
        self.entries, self.key = entries, key
        self.name = f"model-{key[:40]}.onnx"

    @property
    def path(self) -> Path:
        return self.entries.path(self.name)

    def verified_path(self) -> Path | None:
        """The model's path if it is there and matches its record; else ``None`` (a bad one is
        logged and removed)."""
        return self.entries.verified_path(self.name, self.key)

    def store(self, data: bytes) -> Path | None:
        return self.entries.store(self.name, data, self.key)

    def drop(self, reason: str) -> None:
        self.entries._drop(self.name, reason)


def store(folder: Path) -> storage_cache.EntryStore:
    return storage_cache.EntryStore(folder, "onnx", max_entries=MAX_FILES)
