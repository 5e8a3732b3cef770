"""Exceptions of lc0py.

Every error a user can cause (bad file, bad option, bad position) is an ``Lc0pyError``; the CLI
prints ``lc0py: <message>`` on one line and exits with status 2, without a traceback. Messages
name the file or option and say what is wrong.
"""

from __future__ import annotations


class Lc0pyError(Exception):
    """Base class: a user-facing error with a one-line message."""

    exit_code = 2


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
