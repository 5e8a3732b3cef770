"""lc0's configuration file (``src/utils/configfile.cc``): command-line flags, one a line.

``-c FILE`` / ``--config=FILE`` names it; without either, ``lc0.config`` is looked for in the
program's folder, ``$XDG_CONFIG_HOME`` (else ``~/.config/``) + ``lc0``, then each of
``$XDG_CONFIG_DIRS`` (default ``/etc/xdg/``) + ``lc0``; a missing default file is fine,
``--config=`` (empty) reads none. Lines are trimmed; blank lines and lines starting with ``#``
are skipped; a line without a leading ``-`` gets ``--`` put in front (``weights=x.pb.gz``); a line
with a single ``-`` is an error. The file's flags come before the command line's, so the command
line wins.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from lc0py.errors import UsageError

DEFAULT_NAME = "lc0.config"
_DEFAULT = "<default>"


def config_flag(args: Sequence[str]) -> str:
    """The file named by ``--config=X`` / ``-c X`` (the last one wins), or ``<default>``."""
    filename = _DEFAULT
    i = 0
    while i < len(args):
        arg = args[i]
        if arg.startswith("--config="):
            filename = arg[len("--config=") :]
        elif arg in ("-c", "--config") and i + 1 < len(args):
            filename = args[i + 1]
            i += 1
        i += 1
    return filename


def _config_directories() -> list[str]:
    dirs = [str(Path(sys.argv[0] or ".").resolve().parent)]
    xdg = os.environ.get("XDG_CONFIG_HOME")
    user: str | None
    if xdg and os.path.isdir(xdg):
        user = xdg + "/"
    else:
        home = os.environ.get("HOME")
        user = home + "/.config/" if home and os.path.isdir(home + "/.config/") else None
    if user:
        dirs.append(user + "lc0")
    system = os.environ.get("XDG_CONFIG_DIRS")
    for d in ["/etc/xdg/"] if system is None else system.split(":"):
        if d:
            dirs.append(d + ("" if d.endswith("/") else "/") + "lc0")
    return dirs


def parse_config_text(text: str, filename: str) -> list[str]:
    """The flags of a configuration file's text."""
    out = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if not line.startswith("-"):
            line = "--" + line
        if not line.startswith("--"):
            raise UsageError(
                f"{filename}: only '--' arguments are supported in the configuration file: '{line}'"
            )
        out.append(line)
    return out


def config_arguments(args: Sequence[str]) -> list[str]:
    """The flags from the configuration file that ``args`` select (see the module doc)."""
    filename = config_flag(args)
    if filename == "":
        return []
    if filename == _DEFAULT:
        for d in _config_directories():
            path = os.path.join(d, DEFAULT_NAME)
            if os.path.isfile(path):
                filename = path
                break
        else:
            return []
    try:
        text = Path(filename).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"could not open configuration file: {filename} ({exc})") from None
    print(f"Found configuration file: {filename}", file=sys.stderr)
    return parse_config_text(text, filename)
