"""Exceptions of lc0py.

Every error a user can cause (bad file, bad option, bad position) is an ``Lc0pyError``; the CLI
prints ``lc0py: <message>`` on one line and exits with status 2, without a traceback. Messages
name the file or option and say what is wrong.
"""

from __future__ import annotations


def one_line(text: object) -> str:
    """``text`` as one printable line: control characters (a newline, a terminal escape such as
    ``ESC[31m`` in a file name) are written as Python escapes (``\\n``, ``\\x1b``), so a message
    naming a hostile path stays one line and cannot drive the terminal. Every user-facing
    message goes through here: ``Lc0pyError.__str__``, the CLI's ``lc0py: ...`` line and the UCI
    engine's ``error``/``info string`` lines."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class Lc0pyError(Exception):
    """Base class: a user-facing error with a one-line message (see ``one_line``)."""

    exit_code = 2

    def __str__(self) -> str:
        return one_line(super().__str__())


class WeightsFormatError(Lc0pyError, ValueError):
    """The weights file is missing, truncated, corrupt, or not an lc0 network."""


class UnsupportedNetError(Lc0pyError):
    """A well-formed lc0 network of a kind lc0py does not run (e.g. hybrid residual/attention nets)."""


class BackendUnavailable(Lc0pyError):
    """A backend cannot be created here (unknown name, missing package, no GPU/driver)."""


class BackendOptionError(Lc0pyError, ValueError):
    """A ``--backend-opts`` entry is malformed, unknown, or has a bad value."""


class KernelCompileError(Lc0pyError):
    """Run-time compilation of a GPU kernel failed; carries the compiler log."""

    def __init__(self, message: str, log: str = "") -> None:
        super().__init__(message)
        self.log = log


class PositionError(Lc0pyError, ValueError):
    """A bad FEN, an illegal move, or a malformed positions line."""


class UsageError(Lc0pyError):
    """A bad command-line argument or option value."""


class ArgumentError(UsageError, ValueError):
    """A bad argument of an API call (a NUL in a path, ``temperature`` <= 0 or NaN); also a
    ``ValueError``, as Python code calling the API may expect."""
