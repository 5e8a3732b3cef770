"""lc0py's on-disk caches: where they live, and entries that are checked before they are trusted.

Where (``cache_folder``): one resolver for every cache. The root is ``$LC0PY_CACHE_DIR`` if set,
else the platform's user cache folder from ``platformdirs`` (Linux: ``$XDG_CACHE_HOME/lc0py`` or
``~/.cache/lc0py``; macOS: ``~/Library/Caches/lc0py``; Windows: ``%LOCALAPPDATA%\\lc0py\\Cache``).
Each cache is a sub-folder (``kernels``, ``onnx``, ``tuned``; the default net lives in the root);
its own variable (``LC0PY_KERNEL_CACHE``, ``LC0PY_ONNX_CACHE``, ``LC0PY_TUNED_DIR``) moves it or,
set to ``off``, disables it.

Trust (``EntryStore``): folders are created 0700 and refused (logged once, cache off) when owned
by another user or writable by group/others. Every entry ``NAME`` has a record
``NAME.entry.json`` written by the cache with the SHA-256 of the entry's bytes, the digest of
everything the entry was made from (its *inputs*: kernel source, defines, compiler and arch; net
content and export settings; the kernel-parameter space), its size and kind. ``load`` returns the
bytes only if the record exists, names this entry and these inputs, and the bytes hash to the
recorded digest; anything else is one log line, the entry is dropped, and the caller rebuilds.
Eviction considers only entries that have a record: files the cache did not write are never
deleted, whatever their names. Records are per entry (not one shared manifest file), so
concurrent processes never have to lock or merge anything.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import stat
from pathlib import Path

from lc0py.errors import Lc0pyError
from lc0py.storage.atomic import write_atomically

log = logging.getLogger("lc0py.cache")

ENV_ROOT = "LC0PY_CACHE_DIR"
OFF = frozenset({"", "0", "off", "none", "false", "no"})
RECORD_SUFFIX = ".entry.json"
RECORD_VERSION = 1


class UntrustedCache(Lc0pyError):
    """A cache folder that is not ours alone (another owner, group/other-writable, not a folder)."""


def cache_root() -> Path:
    """``$LC0PY_CACHE_DIR``, else the platform's user cache folder for lc0py."""
    explicit = os.environ.get(ENV_ROOT)
    if explicit:
        return Path(explicit).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("lc0py", appauthor=False))


def cache_folder(name: str = "", env: str | None = None) -> Path | None:
    """The folder of cache ``name`` (``""``: the root): ``$env`` if set (``off`` disables it:
    ``None``), else ``cache_root() / name``."""
    if env is not None:
        value = os.environ.get(env)
        if value is not None:
            return None if value.strip().lower() in OFF else Path(value).expanduser()
    root = cache_root()
    return root / name if name else root


def prepare_folder(folder: Path) -> Path:
    """Create ``folder`` (0700) if needed and check that only this user can write in it.

    Raises ``UntrustedCache`` (one line) otherwise; ``OSError`` if it cannot be created.
    """
    if not folder.exists() and not folder.is_symlink():
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        with contextlib.suppress(OSError):
            os.chmod(folder, 0o700)  # mkdir's mode is filtered by the umask
    st = os.stat(folder)
    if not stat.S_ISDIR(st.st_mode):
        raise UntrustedCache(f"cache folder {folder} is not a directory")
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        raise UntrustedCache(f"cache folder {folder} belongs to another user (uid {st.st_uid}); not using it")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise UntrustedCache(f"cache folder {folder} is writable by other users; not using it "
                             f"(chmod 700 {folder} to use it)")
    return folder


def sha256_bytes(data: bytes | bytearray | memoryview) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 22), b""):
            digest.update(chunk)
    return digest.hexdigest()


class EntryStore:
    """Verified entries in one cache folder (see the module docstring).

    ``kind`` names the cache in log lines and records (``"kernel"``, ``"onnx"``, ``"tuned"``,
    ``"default-net"``); ``max_entries`` bounds the folder (least recently used go first).
    """

    def __init__(self, folder: Path, kind: str, max_entries: int | None = None) -> None:
        self.folder = folder
        self.kind = kind
        self.max_entries = max_entries
        self._checked = False

    def path(self, name: str) -> Path:
        return self.folder / name

    def _record_path(self, name: str) -> Path:
        return self.folder / (name + RECORD_SUFFIX)

    def usable(self) -> bool:
        """True if the folder exists (or was created) and is trusted; logs once otherwise."""
        if self._checked:
            return True
        try:
            prepare_folder(self.folder)
        except (UntrustedCache, OSError) as exc:
            log.warning("%s cache: %s; continuing without it", self.kind, exc)
            return False
        self._checked = True
        return True

    def _record(self, name: str) -> dict[str, object] | None:
        try:
            doc = json.loads(self._record_path(name).read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            return {}
        return doc if isinstance(doc, dict) else {}

    def _mismatch(self, name: str, inputs: str) -> tuple[Path | None, str]:
        """``(path, "")`` for a verified entry; ``(None, reason)`` otherwise (reason "" = absent)."""
        path = self.path(name)
        if not path.is_file() or path.is_symlink():
            return None, ""
        record = self._record(name)
        if record is None:
            return None, "it has no record (not written by this cache)"
        if (record.get("version") != RECORD_VERSION or record.get("kind") != self.kind
                or record.get("file") != name):
            return None, "its record is unreadable or names another entry"
        if record.get("inputs") != inputs:
            return None, "it was built from other inputs"
        return path, ""

    def _entry_path(self, name: str, inputs: str) -> Path | None:
        """The entry's file when the cache is usable and its record matches ``inputs``; else
        ``None`` (a mismatching entry is dropped)."""
        if not self.usable():
            return None
        path, reason = self._mismatch(name, inputs)
        if path is None and reason:
            self._drop(name, reason)
        return path

    def load(self, name: str, inputs: str) -> bytes | None:
        """The entry's bytes if present and verified; else ``None`` (a bad entry is logged and
        removed, so the caller's rebuild replaces it)."""
        path = self._entry_path(name, inputs)
        if path is None:
            return None
        try:
            data = path.read_bytes()
        except OSError as exc:
            self._drop(name, f"unreadable ({exc.strerror or exc})")
            return None
        record = self._record(name) or {}
        if record.get("size") != len(data) or record.get("sha256") != sha256_bytes(data):
            self._drop(name, "its content does not match the digest recorded when it was written")
            return None
        self.touch(name)
        return data

    def verified_path(self, name: str, inputs: str) -> Path | None:
        """Like ``load`` for large entries opened by path (the ONNX model): hashes the file in
        chunks and returns its path, or ``None``."""
        path = self._entry_path(name, inputs)
        if path is None:
            return None
        record = self._record(name) or {}
        try:
            ok = record.get("size") == path.stat().st_size and record.get("sha256") == sha256_file(path)
        except OSError:
            ok = False
        if not ok:
            self._drop(name, "its content does not match the digest recorded when it was written")
            return None
        self.touch(name)
        return path

    def store(self, name: str, data: bytes | bytearray | memoryview | str, inputs: str) -> Path | None:
        """Write the entry and its record; evict beyond ``max_entries``. Returns the entry's path,
        or ``None`` (logged, not raised) when it cannot be written: a cache is an optimisation."""
        if not self.usable():
            return None
        payload = data.encode() if isinstance(data, str) else bytes(data)
        record = {"version": RECORD_VERSION, "kind": self.kind, "file": name, "inputs": inputs,
                  "size": len(payload), "sha256": sha256_bytes(payload)}
        try:
            path = write_atomically(self.path(name), payload, private=True)
            write_atomically(self._record_path(name), json.dumps(record, indent=1), private=True)
        except Lc0pyError as exc:
            log.info("%s cache: could not write %s (%s); continuing without it", self.kind, name, exc)
            return None
        self.evict(keep=name)
        return path

    def touch(self, name: str) -> None:
        """Mark an entry as just used (eviction removes the least recently used)."""
        with contextlib.suppress(OSError):
            os.utime(self.path(name))

    def entries(self) -> list[str]:
        """Names of the entries this cache wrote (those with a record naming them)."""
        names = []
        for record_path in self.folder.glob("*" + RECORD_SUFFIX):
            name = record_path.name[: -len(RECORD_SUFFIX)]
            record = self._record(name)
            if record and record.get("file") == name and record.get("kind") == self.kind:
                names.append(name)
        return names

    def evict(self, keep: str | None = None) -> None:
        if self.max_entries is None:
            return

        def last_used(name: str) -> float:
            try:
                return self.path(name).stat().st_mtime
            except OSError:
                return 0.0

        names = sorted((n for n in self.entries() if n != keep), key=last_used, reverse=True)
        for old in names[max(self.max_entries - (keep is not None), 0):]:
            self._remove(old)
            log.info("%s cache: removed the least recently used %s", self.kind, old)

    def _remove(self, name: str) -> None:
        for p in (self.path(name), self._record_path(name)):
            with contextlib.suppress(OSError):
                p.unlink()

    def _drop(self, name: str, reason: str) -> None:
        log.warning("%s cache: %s failed verification (%s); rebuilding it", self.kind, name, reason)
        record = self._record(name)
        if record and record.get("file") == name:
            self._remove(name)  # ours: remove both; a foreign file is left to be replaced by store()
        else:
            with contextlib.suppress(OSError):
                self._record_path(name).unlink()
