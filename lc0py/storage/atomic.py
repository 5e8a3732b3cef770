"""The one way lc0py writes a file: atomically, and never over something it should not replace.

Every writer in the package (``make-net -o``, ``export-onnx -o``, ``save_network``, the default
net, the ONNX, kernel and tuning caches) goes through ``write_atomically``:

* the data goes to a ``mkstemp`` file in the target's own folder (never a predictable name, never
  another folder), is flushed and fsynced, then ``os.replace``\\ d over the target, so readers see
  the old file or the new one, never half of one, and a failure leaves nothing behind;
* a target that exists and is not a regular file (a directory, a character device, a FIFO, a
  socket) is refused; a symbolic link is refused unless ``force`` (then the file it points to is
  replaced and the link kept);
* an existing file keeps its permission bits (a 0600 file stays 0600); a new one gets
  ``0666 & ~umask`` (``private=True``: 0600, for caches);
* a target that is the same file (same device and inode) as one of ``inputs`` is refused, so
  ``export-onnx -w X -o X`` cannot destroy its own input.

* the temporary file's name carries the writer's PID (``.NAME.p<pid>.XXXXXXXX.tmp``); a write
  killed with SIGKILL leaves it behind, so every write first removes the stale temporaries in its
  folder (``remove_stale_temporaries``): ours whose writer is gone (or untouched for 10 minutes),
  and, in cache folders (``private=True``), unmarked ``.NAME.XXXXXXXX.tmp`` files untouched for
  10 minutes (left by earlier versions).

Errors are one ``UsageError`` line naming ``what`` (the option or file) and the reason.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from lc0py.errors import UsageError
from lc0py.storage.reading import kind_of

#: A temporary file untouched this long is not being written (the largest write takes seconds).
STALE_SECONDS = 600.0
#: ... nor one whose writer's PID is gone and that is this old (a margin for PID namespaces,
#: where another container's live writer may look gone from here).
STALE_DEAD_WRITER_SECONDS = 30.0
_MARKED = re.compile(r"^\..+\.p(\d+)\.[A-Za-z0-9_]{8}\.tmp$")
_UNMARKED = re.compile(r"^\..+\.[A-Za-z0-9_]{8}\.tmp$")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def remove_stale_temporaries(folder: str | os.PathLike[str], *, unmarked: bool = False) -> list[str]:
    """Remove the temporary files that killed writes left in ``folder`` (see the module
    docstring); ``unmarked``: also old ``.NAME.XXXXXXXX.tmp`` files without a PID (caches only).
    Returns the names removed. Never raises: cleaning up is best effort."""
    removed: list[str] = []
    now = time.time()
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    for name in names:
        if not name.startswith(".") or not name.endswith(".tmp"):
            continue
        marked = _MARKED.match(name)
        if not marked and not (unmarked and _UNMARKED.match(name)):
            continue
        path = os.path.join(folder, name)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        age = now - st.st_mtime
        pid = int(marked.group(1)) if marked else None
        gone = pid is not None and pid != os.getpid() and not _alive(pid)
        if age > STALE_SECONDS or (gone and age > STALE_DEAD_WRITER_SECONDS):
            with contextlib.suppress(OSError):
                os.unlink(path)
                removed.append(name)
    return removed


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _stat_or_none(
    stat_call: Callable[[Path], os.stat_result], target: Path, label: str
) -> os.stat_result | None:
    """``stat_call(target)``, or None where nothing is there; another failure is one line."""
    try:
        return stat_call(target)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UsageError(f"{label}: cannot write there ({exc.strerror or exc})") from None


def check_target(path: str | os.PathLike[str], *, what: str | None = None, force: bool = False,
                 inputs: Iterable[str | os.PathLike[str]] = ()) -> Path:
    """Validate ``path`` as a write target; return the path to replace (a symlink's target with
    ``force``). Call it early (before slow work) and again inside ``write_atomically``."""
    target = Path(os.fspath(path))
    label = what or str(target)
    st = _stat_or_none(os.lstat, target, label)
    if st is not None and stat.S_ISLNK(st.st_mode):
        if not force:
            raise UsageError(f"{label}: is a symbolic link; not replacing it (use --force to write "
                             "to the file it points to)")
        target = Path(os.path.realpath(target))
        st = _stat_or_none(os.stat, target, label)
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise UsageError(f"{label}: is {kind_of(st.st_mode)}, not a regular file; not replacing it")
    if st is not None:
        for source in inputs:
            with contextlib.suppress(OSError):
                src = os.stat(source)
                if (src.st_dev, src.st_ino) == (st.st_dev, st.st_ino):
                    raise UsageError(f"{label}: is the same file as the input {os.fspath(source)}; "
                                     "choose another output")
    parent = target.parent
    if not parent.is_dir():
        raise UsageError(f"{label}: cannot write there (no directory '{parent}')")
    return target


def write_atomically(path: str | os.PathLike[str], data: bytes | bytearray | memoryview | str, *,
                     what: str | None = None, force: bool = False, private: bool = False,
                     inputs: Iterable[str | os.PathLike[str]] = ()) -> Path:
    """Write ``data`` (bytes, or text as UTF-8) to ``path`` as the module docstring says; return
    the path written (a symlink's target with ``force``)."""
    inputs = tuple(inputs)
    target = check_target(path, what=what, force=force, inputs=inputs)
    label = what or str(path)
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = 0o600 if private else 0o666 & ~_umask()
    except OSError as exc:
        raise UsageError(f"{label}: cannot write there ({exc.strerror or exc})") from None
    payload = data.encode() if isinstance(data, str) else data
    remove_stale_temporaries(target.parent, unmarked=private)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.p{os.getpid()}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise UsageError(f"{label}: cannot write there ({exc.strerror or exc})") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise UsageError(f"{label}: writing failed ({exc.strerror or exc})") from None
        raise
    return target
