"""Where numba keeps lc0py's compiled machine code: ``cached_njit``, numba's ``njit`` with a cache
folder chosen per function by lc0py, never by numba's process-wide settings.

numba's ``cache=True`` picks a folder by trying, in order, ``numba.config.CACHE_DIR``, the
module's ``__pycache__`` and ``~/.cache/numba``, and raises at *decoration* time (so at import)
when none is writable: a service account without a writable HOME, running an installed copy,
could not even import lc0py (issue 30: ``cannot cache function 'mix'``). Setting
``numba.config.CACHE_DIR`` instead would move every other numba user's cache in the process.

``cached_njit`` installs its own cache object on each dispatcher it creates (a locator that
answers with one folder, decided once per process):

1. ``$LC0PY_NUMBA_CACHE`` if set (``off`` disables the cache), else ``numba/`` under lc0py's cache
   folder (``$LC0PY_CACHE_DIR`` or the platform's user cache, ``storage.cache``);
2. if that cannot be created or is not ours alone: ``<temp>/lc0py-<uid>/numba``;
3. if neither works: no cache (everything compiles in each process).

A fallback is said once, on the ``lc0py.cache`` logger (a warning: one stderr line). Each group of
functions (``tag``) has its own sub-folder; ``digest`` (e.g. of every source file the functions
call into) is part of its name, since numba checks only the timestamp of a function's own file.
``NUMBA_DISABLE_JIT=1`` still runs the plain Python source.
"""

from __future__ import annotations

import functools
import logging
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lc0py.storage.cache import OFF, cache_folder, prepare_folder

log = logging.getLogger("lc0py.cache")

ENV = "LC0PY_NUMBA_CACHE"


def _usable(folder: Path) -> str | None:
    """None if ``folder`` can hold the cache (created 0700, ours alone, writable), else why not."""
    try:
        prepare_folder(folder)
        tempfile.TemporaryFile(dir=folder).close()
    except OSError as exc:
        return exc.strerror or str(exc) or type(exc).__name__
    except Exception as exc:  # UntrustedCache, anything platformdirs raises
        return str(exc) or type(exc).__name__
    return None


def _temp_folder() -> Path:
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    return Path(tempfile.gettempdir()) / f"lc0py-{uid}" / "numba"


@functools.lru_cache(maxsize=1)
def numba_cache_root() -> Path | None:
    """The folder lc0py's compiled code is cached in (decided once per process), or None."""
    try:
        first = cache_folder("numba", ENV)
    except Exception as exc:  # e.g. no usable home folder for platformdirs
        first, why = None, str(exc) or type(exc).__name__
    else:
        if first is None:  # LC0PY_NUMBA_CACHE=off
            return None
        why = _usable(first) or ""
        if not why:
            return first
    temp = _temp_folder()
    why_temp = _usable(temp)
    if why_temp is None:
        log.warning("lc0py: compiled-code cache: %s (%s); using %s instead", first, why, temp)
        return temp
    log.warning(
        "lc0py: compiled-code cache off: %s (%s) and %s (%s) are not usable; "
        "the search core compiles in every process", first, why, temp, why_temp,
    )
    return None


@functools.cache
def _group_folder(tag: str, digest: str) -> Path | None:
    root = numba_cache_root()
    if root is None:
        return None
    folder = root / (f"{tag}-{digest}" if digest else tag)
    return None if _usable(folder) else folder


def _make_cache(folder: Path, py_func: Callable[..., Any]) -> Any:
    """A numba ``FunctionCache`` for ``py_func`` that reads and writes ``folder`` only."""
    from numba.core import caching

    class Locator(caching._SourceFileBackedLocatorMixin, caching._CacheLocator):  # type: ignore[misc, name-defined]
        def __init__(self, func: Callable[..., Any], py_file: str) -> None:
            self._py_file = py_file
            self._lineno = func.__code__.co_firstlineno

        def ensure_cache_path(self) -> None:
            os.makedirs(folder, mode=0o700, exist_ok=True)

        def get_cache_path(self) -> str:
            return str(folder)

        @classmethod
        def from_function(cls, func: Callable[..., Any], py_file: str) -> Any:
            return cls(func, py_file)

    class Impl(caching.CompileResultCacheImpl):  # type: ignore[misc, name-defined]
        _locator_classes = [Locator]

    class Cache(caching.FunctionCache):  # type: ignore[misc, name-defined]
        _impl_class = Impl

    return Cache(py_func)


class _LazyCache:
    """The dispatcher's cache, resolved at its first load or save (not at import: a command that
    never runs compiled code creates no folder and says nothing)."""

    def __init__(self, tag: str, digest: str, py_func: Callable[..., Any]) -> None:
        self._tag, self._digest, self._py_func = tag, digest, py_func
        self._real: Any = None

    def _cache(self) -> Any:
        if self._real is None:
            folder = _group_folder(self._tag, self._digest)
            if folder is None:
                from numba.core.caching import NullCache

                self._real = NullCache()
            else:
                self._real = _make_cache(folder, self._py_func)
        return self._real

    @property
    def cache_path(self) -> str | None:
        return getattr(self._cache(), "cache_path", None)

    def load_overload(self, sig: Any, target_context: Any) -> Any:
        return self._cache().load_overload(sig, target_context)

    def save_overload(self, sig: Any, data: Any) -> None:
        self._cache().save_overload(sig, data)

    def flush(self) -> None:
        self._cache().flush()


def cached_njit(tag: str, digest: str = "", **options: Any) -> Callable[[Callable[..., Any]], Any]:
    """``numba.njit(**options)`` whose machine code is cached in lc0py's folder for ``tag``
    (see the module docstring); without a usable folder, compiled in each process."""
    import numba

    def decorate(func: Callable[..., Any]) -> Any:
        dispatcher = numba.njit(**options)(func)
        if hasattr(dispatcher, "_cache"):  # not with NUMBA_DISABLE_JIT
            dispatcher._cache = _LazyCache(tag, digest, dispatcher.py_func)
        return dispatcher

    return decorate


def numba_cache_folder(tag: str, digest: str = "") -> Path | None:
    """The folder ``cached_njit(tag, digest)`` caches in (None: not cached)."""
    return _group_folder(tag, digest)


__all__ = ["ENV", "OFF", "cached_njit", "numba_cache_folder", "numba_cache_root"]
