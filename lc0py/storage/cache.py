"""lc0py's on-disk caches: where they live, and entries that are checked before they are trusted.

Where (``cache_folder``): one resolver for every cache. The root is ``$LC0PY_CACHE_DIR`` if set,
else the platform's user cache folder from ``platformdirs`` (Linux: ``$XDG_CACHE_HOME/lc0py`` or
``~/.cache/lc0py``; macOS: ``~/Library/Caches/lc0py``; Windows: ``%LOCALAPPDATA%\\lc0py\\Cache``).
Each cache is a sub-folder (``kernels``, ``onnx``, ``tuned``; the default net lives in the root);
its own variable (``LC0PY_KERNEL_CACHE``, ``LC0PY_ONNX_CACHE``, ``LC0PY_TUNED_DIR``) moves it or,
set to ``off``, disables it.

Trust (``EntryStore``): folders (and any parents lc0py creates for them) are created 0700 whatever
the umask (the mode is set explicitly), and refused (logged once, cache off) when owned by another
user or writable by group/others. Every file in a folder is opened non-blocking and checked with
``fstat`` before it is read (``read_regular``): a FIFO, device, directory or symbolic link in place
of an entry or a record is one log line and treated as a corrupt entry (never a hang); a FIFO,
socket or device there is removed (the folder is ours alone), a directory or link is left alone.

Every entry ``NAME`` has a record ``NAME.entry.json`` written by the cache with the SHA-256 of the
entry's bytes, the digest of everything the entry was made from (its *inputs*: kernel source,
defines, compiler and arch; net content and export settings; the kernel-parameter space), its size
and kind. ``load`` returns the
bytes only if the record exists, names this entry and these inputs, and the bytes hash to the
recorded digest; anything else is one log line, the entry is dropped, and the caller rebuilds.
Eviction considers only entries that have a record: files the cache did not write are never
deleted, whatever their names. Records are per entry (not one shared manifest file), so
concurrent processes never have to lock or merge anything.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import logging
import os
import stat
from pathlib import Path
from typing import BinaryIO

from lc0py.errors import Lc0pyError, UsageError
from lc0py.storage.atomic import write_atomically
from lc0py.storage.reading import kind_of

log = logging.getLogger("lc0py.cache")

ENV_ROOT = "LC0PY_CACHE_DIR"
OFF = frozenset({"", "0", "off", "none", "false", "no"})
RECORD_SUFFIX = ".entry.json"
RECORD_VERSION = 1


class UntrustedCache(Lc0pyError):
    """A cache folder that is not ours alone (another owner, group/other-writable, not a folder)."""


def _configured_path(variable: str, value: str) -> Path:
    """``$variable`` as a folder: ``~`` and ``~user`` expand as a shell expands them; the result
    must be an absolute path without control characters. Anything else is one ``UsageError``
    line naming the variable (never a traceback)."""
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise UsageError(f"{variable}={value!r}: a folder name with control characters; not using it")
    try:
        path = Path(value).expanduser()
    except RuntimeError:  # ~user for a user this system does not know, or ~ without HOME
        user = value[1:].split("/", 1)[0] or "the current user"
        raise UsageError(f"{variable}={value!r}: cannot expand '~' "
                         f"(no home folder known for {user})") from None
    if not path.is_absolute():
        raise UsageError(f"{variable}={value!r}: not an absolute path (give the full path of a folder)")
    return path


def cache_root() -> Path:
    """``$LC0PY_CACHE_DIR`` (``~``/``~user`` expanded; relative or unexpandable: ``UsageError``),
    else the platform's user cache folder for lc0py."""
    explicit = os.environ.get(ENV_ROOT)
    if explicit:
        return _configured_path(ENV_ROOT, explicit)
    import platformdirs

    return Path(platformdirs.user_cache_dir("lc0py", appauthor=False))


def cache_folder(name: str = "", env: str | None = None) -> Path | None:
    """The folder of cache ``name`` (``""``: the root): ``$env`` if set (``off`` disables it:
    ``None``), else ``cache_root() / name``."""
    if env is not None:
        value = os.environ.get(env)
        if value is not None:
            return None if value.strip().lower() in OFF else _configured_path(env, value)
    root = cache_root()
    return root / name if name else root


def prepare_folder(folder: Path) -> Path:
    """Create ``folder`` (0700) if needed and check that only this user can write in it.

    Raises ``UntrustedCache`` (one line) otherwise; ``OSError`` if it cannot be created.
    """
    _make_private_folders(folder)
    st = os.stat(folder)
    if not stat.S_ISDIR(st.st_mode):
        raise UntrustedCache(f"cache folder {folder} is not a directory")
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        raise UntrustedCache(f"cache folder {folder} belongs to another user (uid {st.st_uid}); not using it")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise UntrustedCache(f"cache folder {folder} is writable by other users; not using it "
                             f"(chmod 700 {folder} to use it)")
    return folder


def _make_private_folders(folder: Path) -> None:
    """Create ``folder`` and its missing parents, each 0700: the mode is set with ``chmod`` after
    ``mkdir`` (which filters it through the umask), so ``umask 002`` cannot leave a parent 0775
    that lc0py would then refuse as writable by others. Existing folders are left as they are."""
    missing = []
    here = folder
    while not os.path.lexists(here):
        missing.append(here)
        if here.parent == here:
            break
        here = here.parent
    for path in reversed(missing):
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:  # another process made it first: its mode is checked by the caller
            continue
        os.chmod(path, 0o700)


_NO_WAIT = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
            | getattr(os, "O_NOCTTY", 0))


def _open_regular(path: Path) -> BinaryIO:
    """``path`` opened for reading if it is a regular file (opened non-blocking, no symbolic link
    followed, checked with ``fstat`` on the open descriptor); ``NotRegular`` otherwise, so a FIFO
    in place of a cache file never blocks."""
    try:
        fd = os.open(path, _NO_WAIT)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # O_NOFOLLOW on a symbolic link
            raise NotRegular("a symbolic link") from None
        raise
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise NotRegular(kind_of(mode) or "not a regular file")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def read_regular(path: Path, limit: int | None = None) -> bytes:
    """The bytes of ``path`` (at most ``limit``) if it is a regular file (``_open_regular``)."""
    with _open_regular(path) as f:
        return f.read() if limit is None else f.read(limit)


def sha256_regular_file(path: Path) -> tuple[int, str]:
    """``(size, SHA-256)`` of ``path`` read in chunks, with ``_open_regular``'s checks."""
    digest = hashlib.sha256()
    size = 0
    with _open_regular(path) as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            digest.update(chunk)
            size += len(chunk)
    return size, digest.hexdigest()


class NotRegular(OSError):
    """A cache file that is not a regular file; the message says what it is."""


def sha256_bytes(data: bytes | bytearray | memoryview) -> str:
    return hashlib.sha256(data).hexdigest()


class EntryStore:
    """Verified entries in one cache folder (see the module docstring).

    ``kind`` names the cache in log lines and records (``"kernel"``, ``"onnx"``, ``"tuned"``,
    ``"default-net"``); ``max_entries`` bounds the folder (least recently used go first).
    ``last_error`` says why the folder was unusable or the last write failed (errno text).
    """

    def __init__(self, folder: Path, kind: str, max_entries: int | None = None) -> None:
        self.folder = folder
        self.kind = kind
        self.max_entries = max_entries
        self._checked = False
        self.last_error: str | None = None

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
            self.last_error = (str(exc) if isinstance(exc, UntrustedCache)
                               else f"cannot create the cache folder {self.folder}: {exc.strerror or exc}")
            log.warning("%s cache: %s; continuing without it", self.kind, self.last_error)
            return False
        self._checked = True
        return True

    def check_writable(self, size: int = 0) -> str | None:
        """Why an entry of ``size`` bytes cannot be written here (errno text: read-only, no space,
        permission), or ``None``. Cheap: call it before expensive work whose result goes here."""
        if not self.usable():
            return self.last_error
        import tempfile

        try:
            fd, probe = tempfile.mkstemp(prefix=".write-check.", suffix=".tmp", dir=self.folder)
        except OSError as exc:
            return f"cannot write in {self.folder}: {exc.strerror or exc}"
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(probe)
        if size:
            try:
                fs = os.statvfs(self.folder)
            except (OSError, AttributeError):
                return None
            free = fs.f_bavail * fs.f_frsize
            if free < size:
                return (f"no space left in {self.folder} ({os.strerror(errno.ENOSPC)}: "
                        f"{free / 1e6:.0f} MB free, {size / 1e6:.0f} MB needed)")
        return None

    def _record(self, name: str) -> dict[str, object] | None:
        try:
            doc = json.loads(read_regular(self._record_path(name), 1 << 20))
        except FileNotFoundError:
            return None
        except NotRegular as exc:
            log.warning("%s cache: the record of %s is %s, not a file; ignoring it", self.kind, name, exc)
            return {}
        except (OSError, ValueError):
            return {}
        return doc if isinstance(doc, dict) else {}

    def _mismatch(self, name: str, inputs: str) -> tuple[Path | None, str]:
        """``(path, "")`` for an entry whose record matches ``inputs``; ``(None, reason)`` otherwise
        (reason "" = absent). Its bytes are checked by the caller."""
        path = self.path(name)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return None, ""
        except OSError as exc:
            return None, f"unreadable ({exc.strerror or exc})"
        if not stat.S_ISREG(st.st_mode):
            kind = "a symbolic link" if stat.S_ISLNK(st.st_mode) else (kind_of(st.st_mode) or "not a file")
            return None, f"it is {kind}, not a file"
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
            data = read_regular(path)
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
            size, digest = sha256_regular_file(path)
            ok = record.get("size") == size and record.get("sha256") == digest
        except OSError:
            ok = False
        if not ok:
            self._drop(name, "its content does not match the digest recorded when it was written")
            return None
        self.touch(name)
        return path

    def store(self, name: str, data: bytes | bytearray | memoryview | str, inputs: str) -> Path | None:
        """Write the entry and its record; evict beyond ``max_entries``. Returns the entry's path,
        or ``None`` (logged, not raised; the reason in ``last_error``) when it cannot be written:
        a cache is an optimisation."""
        if not self.usable():
            return None
        payload = data.encode() if isinstance(data, str) else bytes(data)
        record = {"version": RECORD_VERSION, "kind": self.kind, "file": name, "inputs": inputs,
                  "size": len(payload), "sha256": sha256_bytes(payload)}
        for leftover in (self.path(name), self._record_path(name)):
            self._remove_if_not_regular(leftover)
        try:
            path = write_atomically(self.path(name), payload, private=True)
            write_atomically(self._record_path(name), json.dumps(record, indent=1), private=True)
        except Lc0pyError as exc:
            self.last_error = str(exc)
            log.info("%s cache: could not write %s (%s); continuing without it", self.kind, name, exc)
            return None
        self.evict(keep=name)
        return path

    def touch(self, name: str) -> None:
        """Mark an entry as just used (eviction removes the least recently used)."""
        with contextlib.suppress(OSError):
            os.utime(self.path(name), follow_symlinks=False)

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
                return os.lstat(self.path(name)).st_mtime
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

    def _remove_if_not_regular(self, path: Path) -> None:
        """A FIFO, socket or device where a cache file belongs: the folder is ours alone (checked),
        so it is removed. A directory or a symbolic link is left (someone put it there; it is never
        followed or used, and the write then fails, logged)."""
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            return
        if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
            with contextlib.suppress(OSError):
                path.unlink()

    def _drop(self, name: str, reason: str) -> None:
        log.warning("%s cache: %s failed verification (%s); rebuilding it", self.kind, name, reason)
        for leftover in (self.path(name), self._record_path(name)):
            self._remove_if_not_regular(leftover)
        record = self._record(name)
        if record and record.get("file") == name:
            self._remove(name)  # ours: remove both; a foreign file is left to be replaced by store()
        else:
            with contextlib.suppress(OSError):
                self._record_path(name).unlink()
