"""The UCI traffic log (lc0's ``LogFile`` / ``--logfile``): every line the engine reads
(``>> ...``) and writes (``<< ...``), with lc0's time stamp (``MMDD HH:MM:SS.micro``).

As lc0's logger: the lines of the session so far are kept (a bounded buffer) and written when a
log file is named, after a ``Log started.`` banner, so ``setoption name LogFile`` in the middle
of a session still records its beginning; the file is appended to; ``<stderr>`` logs to the
console; an empty value stops logging. The file must be a regular file (or not exist yet): it is
opened without blocking and checked, so a FIFO or a device named as the log is refused in one
line rather than hanging the engine. Symbolic links are followed, as for any log.
"""

from __future__ import annotations

import collections
import datetime
import os
import stat
import sys
import threading
from typing import TextIO

from lc0py.errors import UsageError, one_line

STDERR = "<stderr>"  # lc0's special value
_KEPT_LINES = 2000  # lines of the session kept for a log file named later


def open_log(path: str) -> TextIO:
    """``path`` opened for appending (created 0600 when new); ``UsageError`` naming it unless
    it is a regular file."""
    if path == STDERR:
        return sys.stderr
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise UsageError(f"LogFile {one_line(path)}: cannot open it ({exc.strerror or exc})") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise UsageError(f"LogFile {one_line(path)}: is not a regular file; not logging to it")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "a", encoding="utf-8", errors="backslashreplace")


class TrafficLog:
    """Thread-safe: the reader thread logs commands, search threads log their output."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: collections.deque[str] = collections.deque(maxlen=_KEPT_LINES)
        self._file: TextIO | None = None
        self.path = ""

    def set_file(self, path: str) -> None:
        """Log to ``path`` from now on (with the session so far); "" stops logging."""
        new = open_log(path) if path else None
        with self._lock:
            self._close_locked()
            self._file = new
            self.path = path
            if new is not None:
                new.write("\n\n============= Log started. =============\n")
                new.writelines(self._kept)
                new.flush()

    def record(self, direction: str, line: str) -> None:
        """One line read (``>>``) or written (``<<``)."""
        now = datetime.datetime.now()
        text = f"{now:%m%d %H:%M:%S.%f} {direction} {one_line(line.rstrip(chr(10)))}\n"
        with self._lock:
            self._kept.append(text)
            if self._file is not None:
                try:
                    self._file.write(text)
                    self._file.flush()
                except (OSError, ValueError):  # disk full, closed: the game goes on unlogged
                    self._close_locked()

    def close(self) -> None:
        with self._lock:
            self._close_locked()

    def _close_locked(self) -> None:
        if self._file is not None and self._file is not sys.stderr:
            try:
                self._file.close()
            except OSError:
                pass
        self._file = None
