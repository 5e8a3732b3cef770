"""Opening a file the user named for reading: regular files only, and never a blocking open.

A FIFO with no writer blocks ``open`` forever and ``/dev/zero`` never ends, so every input lc0py
reads (weights, positions files) is opened non-blocking and checked with ``fstat`` on the open
descriptor (a path swapped between a check and the open cannot slip through). Anything but a
regular file is one error line that says what it is (a directory, a FIFO, a character device...).
"""

from __future__ import annotations

import os
import stat
from typing import BinaryIO

from lc0py.errors import Lc0pyError

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def kind_of(mode: int) -> str | None:
    """What a non-regular file is, in words (``None`` for a regular file)."""
    if stat.S_ISREG(mode):
        return None
    for test, words in _KINDS:
        if test(mode):
            return words
    return "not a regular file"


def open_regular_file(name: str, what: str, error: type[Lc0pyError], label: str | None = None) -> BinaryIO:
    """Open ``name`` (binary) if it is a regular file; else raise ``error`` naming ``what``.

    Messages start with ``label`` (default: ``name``), e.g. ``--positions FILE: is a FIFO ...``.
    """
    shown = name if label is None else label
    try:
        fd = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise error(f"{shown}: no such {what}") from None
    except OSError as exc:
        raise error(f"{shown}: cannot read {what} ({exc.strerror or exc})") from None
    kind = kind_of(os.fstat(fd).st_mode)
    if kind is not None:
        os.close(fd)
        raise error(f"{shown}: is {kind}, not a {what}")
    if hasattr(os, "set_blocking"):
        os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def check_regular_file(name: str, what: str, error: type[Lc0pyError], label: str | None = None) -> None:
    """Fail early (before slow work) exactly as ``open_regular_file`` would; opens nothing for long."""
    open_regular_file(name, what, error, label).close()
