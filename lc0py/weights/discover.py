"""``<autodiscover>``: find a network file the way lc0 does (``src/neural/loader.cc``,
``DiscoverWeightsFile``), so lc0py finds the nets an lc0 install already has.

Folders, in order: the program's own folder, the user data folder ``$XDG_DATA_HOME`` (else
``~/.local/share/``) + ``lc0``, then each of ``$XDG_DATA_DIRS`` (default ``/usr/local/share/`` and
``/usr/share/``) + ``lc0``. In each folder and its ``networks`` sub-folder, files of at least
500 000 bytes are candidates, newest first; the first whose (gunzipped, if gzipped) bytes 1..4 hold
lc0's weights magic ``0x1c0`` (little endian; byte 0 is the protobuf tag) wins. The first folder
with a match ends the search. Nothing found gives ``None``.
"""

from __future__ import annotations

import gzip
import os
import sys
from collections.abc import Iterable
from pathlib import Path

AUTODISCOVER = "<autodiscover>"
MIN_FILE_SIZE = 500_000
WEIGHTS_MAGIC = 0x1C0


def program_directory() -> Path:
    """lc0's ``CommandLine::BinaryDirectory()``: the folder of the program that was started."""
    return Path(sys.argv[0] or ".").resolve().parent


def _user_data_directory() -> str | None:
    xdg = os.environ.get("XDG_DATA_HOME")
    if xdg and os.path.isdir(xdg):
        return xdg + "/"
    home = os.environ.get("HOME")
    if not home:
        return None
    path = home + "/.local/share/"
    return path if os.path.isdir(path) else None


def _system_data_directories() -> list[str]:
    dirs = os.environ.get("XDG_DATA_DIRS")
    if dirs is None:
        return ["/usr/local/share/", "/usr/share/"]
    return dirs.split(":")


def search_directories(program_dir: Path | None = None) -> list[str]:
    """The folders lc0 looks in, in order."""
    found = [str(program_dir or program_directory())]
    user = _user_data_directory()
    if user:
        found.append(user + "lc0")
    for d in _system_data_directories():
        if d:
            found.append(d + ("" if d.endswith("/") else "/") + "lc0")
    return found


def has_weights_magic(path: str) -> bool:
    """Bytes 1..4 of the (gunzipped) file are lc0's magic; plain files are read as they are."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(2)
        opener = gzip.open if head == b"\x1f\x8b" else open
        with opener(path, "rb") as fh:  # type: ignore[operator]
            buf = fh.read(256)
    except (OSError, EOFError, gzip.BadGzipFile):
        return False
    if len(buf) < 5:
        return False
    return int.from_bytes(buf[1:5], "little") == WEIGHTS_MAGIC


def _candidates(directory: str) -> Iterable[tuple[float, str]]:
    for sub in ("", "/networks"):
        folder = directory + sub
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            path = folder + "/" + name
            try:
                st = os.stat(path)
            except OSError:
                continue
            if not os.path.isfile(path) or st.st_size < MIN_FILE_SIZE:
                continue
            yield st.st_mtime, path


def discover_weights_file(program_dir: Path | None = None) -> str | None:
    """The network lc0 would pick with ``--weights=<autodiscover>``, or ``None``."""
    for directory in search_directories(program_dir):
        for _, path in sorted(_candidates(directory), reverse=True):
            if has_weights_magic(path):
                return path
    return None
