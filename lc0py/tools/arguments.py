"""Flags shared by the tools: integer flags (``--batches 50``, ``--batch-sizes 1,8,64``) with one
``UsageError`` line each, ``--json``/``--json-out`` with one meaning everywhere, and the network
flags ``--weights/--backend/--backend-opts`` from one definition.

Integer flags are parsed here rather than by argparse so that a bad value is one ``lc0py:`` line.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from lc0py.errors import UsageError


def int_value(flag: str, value: str | int | None, lo: int, hi: int) -> int | None:
    """``value`` of ``flag`` as an int in ``[lo, hi]`` (``None`` stays ``None``), else ``UsageError``."""
    if value is None:
        return None
    try:
        n = int(value)
    except ValueError:
        raise UsageError(f"{flag} '{value}' is not an integer") from None
    if not lo <= n <= hi:
        raise UsageError(f"{flag} {n} is out of range [{lo}, {hi}]")
    return n


def int_list(flag: str, text: str, lo: int, hi: int) -> list[int]:
    """``"64,256"`` -> ``[64, 256]``, each in ``[lo, hi]``; empty items are skipped, no values is an error."""
    out = [int_value(flag, item.strip(), lo, hi) for item in text.split(",") if item.strip()]
    if not out:
        raise UsageError(f"{flag}: no values given")
    return [n for n in out if n is not None]


# --- JSON output: one meaning in every tool -------------------------------------------------
# ``--json``: JSON on stdout instead of the human-readable output (which then goes to stderr, or
# is dropped); ``--json-out FILE``: the same JSON written to FILE, human output unchanged.
# attnbench and tune used to take ``--json FILE``; that spelling still works, with a note.

_STDOUT = "\0stdout"


def add_json_arguments(parser: argparse.ArgumentParser, what: str, legacy_file: bool = False) -> None:
    """Add ``--json`` (and ``--json-out FILE``) for a tool whose JSON document is ``what``."""
    if legacy_file:
        parser.add_argument("--json", nargs="?", const=_STDOUT, default=None, metavar="FILE",
                            help=f"print {what} as JSON on stdout (old form --json FILE = --json-out FILE)")
    else:
        parser.add_argument("--json", action="store_true", help=f"print {what} as JSON on stdout")
    parser.add_argument("--json-out", metavar="FILE", help=f"also write {what} as JSON to FILE")


@dataclass(frozen=True)
class JsonTarget:
    """Where a tool's JSON goes: ``stdout`` (replacing the human output) and/or ``file``.

    ``stream`` is the standard output as it was when the flags were read, so a tool may send its
    human output to stderr (``contextlib.redirect_stdout``) and still print the JSON on stdout.
    """

    stdout: bool
    file: Path | None
    stream: TextIO | None = None

    def write(self, text: str) -> None:
        """Send the finished JSON ``text`` to its destinations (the file atomically)."""
        if self.file is not None:
            from lc0py.storage.atomic import write_atomically

            write_atomically(self.file, text + "\n", what=f"--json-out {self.file}")
        if self.stdout:
            stream = self.stream or sys.stdout
            stream.write(text + "\n")
            stream.flush()


def json_target(args: argparse.Namespace, tool: str) -> JsonTarget:
    """``--json``/``--json-out`` of ``args`` checked (directory exists) before any work is done."""
    value = getattr(args, "json", None)
    out = getattr(args, "json_out", None)
    stdout = value is True or value == _STDOUT
    if isinstance(value, str) and value != _STDOUT:  # the old --json FILE
        if out is not None:
            raise UsageError("--json FILE and --json-out FILE: give one (--json-out)")
        print(f"{tool}: --json FILE is now --json-out FILE (--json alone prints JSON on stdout)",
              file=sys.stderr)
        out = value
    path = Path(out) if out is not None else None
    if path is not None and not path.parent.is_dir():
        raise UsageError(f"--json-out {out}: directory {path.parent} does not exist")
    return JsonTarget(stdout, path, sys.stdout)


# --- the network flags, from the UCI option table ----------------------------------------------
# ``--weights/-w``, ``--backend/-b``, ``--backend-opts/-o`` are UCI options (WeightsFile, Backend,
# BackendOptions); their long flag and help text come from that table (lc0py.uci.options), the
# tools only say what differs (required, default, a sentence about their own use).

_NETWORK_OPTIONS = {"weights": ("WeightsFile", "-w"), "backend": ("Backend", "-b"),
                    "backend_opts": ("BackendOptions", "-o")}


def _spec(dest: str) -> tuple[str, str, str]:
    """``(long flag, short flag, help)`` of the UCI option behind ``dest``."""
    from lc0py.uci.options import build_table

    name, short = _NETWORK_OPTIONS[dest]
    for spec in build_table():
        if spec.name == name and spec.flag:
            return spec.flag, short, spec.help or f"UCI option {name}"
    raise KeyError(name)  # pragma: no cover - the table always has them


def add_weights_argument(parser: Any, required: bool = False, note: str = "") -> None:
    """``--weights/-w FILE`` (``parser`` may be a mutually exclusive group)."""
    flag, short, text = _spec("weights")
    parser.add_argument(flag, short, dest="weights", required=required, metavar="FILE",
                        help=f"{text}{'; ' + note if note else ''}")


def add_backend_arguments(parser: argparse.ArgumentParser, default: str = "auto", note: str = "",
                          opts_note: str = "e.g. precision=fp64") -> None:
    """``--backend/-b NAME`` and ``--backend-opts/-o OPTS``."""
    flag, short, text = _spec("backend")
    parser.add_argument(flag, short, dest="backend", default=default, metavar="NAME",
                        help=f"{text}{'; ' + note if note else ''} (default: {default})")
    flag, short, text = _spec("backend_opts")
    parser.add_argument(flag, short, dest="backend_opts", default="", metavar="OPTS",
                        help=f"backend options, {text} ({opts_note})")
