"""``--backend-opts`` / UCI ``BackendOptions``: ``key=value,key=value`` as lc0 takes them.

Each backend declares the options it understands with ``BackendOptions.take(key, default, lo=,
hi=, choices=)``; ``take`` is the one place that converts and validates: type (from the default),
range, finiteness (NaN and infinity are never a value) and choices, each failure one
``BackendOptionError`` line naming the option. Integers without explicit bounds must lie in
``[0, DEFAULT_INT_MAX]`` and floats in ``[0, DEFAULT_FLOAT_MAX]`` (every backend option is a
count, an index, a size or a delay). ``finish`` refuses anything left over, so a typo is an error
naming the option instead of being silently ignored.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from lc0py.backends.option_groups import OptionGroup, has_group_syntax, parse_option_groups
from lc0py.errors import BackendOptionError

_TRUE = {"1", "true", "on", "yes"}
_FALSE = {"0", "false", "off", "no"}


def parse_backend_options(text: str | None) -> dict[str, str]:
    """Parse ``"a=1,b=x"`` into ``{"a": "1", "b": "x"}`` (keys lower-cased, whitespace stripped)."""
    result: dict[str, str] = {}
    if not text:
        return result
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        if "=" not in item:
            raise BackendOptionError(f"--backend-opts: '{item}' is not key=value")
        key, value = item.split("=", 1)
        key = key.strip().lower()
        if not key:
            raise BackendOptionError(f"--backend-opts: '{item}' has an empty key")
        result[key] = value.strip()
    return result


def to_bool(key: str, value: str) -> bool:
    v = value.strip().lower()
    if v in _TRUE:
        return True
    if v in _FALSE:
        return False
    raise BackendOptionError(f"--backend-opts: {key}='{value}' is not on/off")


#: Bounds for options that do not declare their own: every backend option is a count, an index, a
#: size or a delay, so negative values are refused, and absurd ones are refused before they reach a
#: library that would overflow or allocate them.
DEFAULT_INT_MAX = 1 << 31
DEFAULT_FLOAT_MAX = 1e9


def to_int(key: str, value: str, lo: int | None = 0, hi: int | None = DEFAULT_INT_MAX) -> int:
    try:
        n = int(value.strip())
    except ValueError:
        raise BackendOptionError(f"--backend-opts: {key}='{value}' is not an integer") from None
    if (lo is not None and n < lo) or (hi is not None and n > hi):
        raise BackendOptionError(f"--backend-opts: {key}={n} is out of range [{lo}, {hi}]")
    return n


def to_float(key: str, value: str, lo: float | None = 0.0, hi: float | None = DEFAULT_FLOAT_MAX) -> float:
    try:
        x = float(value)
    except ValueError:
        raise BackendOptionError(f"--backend-opts: {key}='{value}' is not a number") from None
    if not math.isfinite(x):
        raise BackendOptionError(f"--backend-opts: {key}={value.strip()} is not a finite number")
    if (lo is not None and x < lo) or (hi is not None and x > hi):
        raise BackendOptionError(f"--backend-opts: {key}={value.strip()} is out of range [{lo:g}, {hi:g}]")
    return x


@dataclass
class BackendOptions:
    """Options given to one backend; consumed with ``take`` and checked with ``finish``."""

    values: dict[str, str]
    backend: str = ""
    # lc0's nested groups, ``(backend=cuda-fp16,gpu=0),(gpu=1)`` (``option_groups``): only the
    # multi-device backends (demux, roundrobin, multiplexing) take them; ``finish`` refuses them
    # elsewhere. ``root`` is the parsed tree the groups hang from (their parent for inheritance).
    groups: list[OptionGroup] = field(default_factory=list)
    root: OptionGroup | None = None

    @classmethod
    def parse(cls, text: str | dict[str, str] | BackendOptions | None, backend: str = "") -> BackendOptions:
        if isinstance(text, BackendOptions):
            return cls(dict(text.values), backend or text.backend, list(text.groups), text.root)
        if isinstance(text, dict):
            return cls({k.lower(): str(v) for k, v in text.items()}, backend)
        if text and has_group_syntax(text):
            root = parse_option_groups(text)
            return cls(dict(root.values), backend, list(root.groups), root)
        return cls(parse_backend_options(text), backend)

    def take(self, key: str, default: Any, convert: Callable[[str, str], Any] | None = None, *,
             lo: float | None = 0, hi: float | None = None, choices: Sequence[Any] | None = None) -> Any:
        """Remove ``key`` and return it converted and validated, or ``default`` when absent.

        The type follows ``default`` (bool, int, float, str) unless ``convert(key, text)`` is
        given; ``lo``/``hi`` bound numbers (``hi`` defaults to ``DEFAULT_INT_MAX`` /
        ``DEFAULT_FLOAT_MAX``); ``choices`` lists the accepted values.
        """
        if key not in self.values:
            return default
        text = self.values.pop(key)
        if convert is not None:
            value = convert(key, text)
        elif isinstance(default, bool):
            value = to_bool(key, text)
        elif isinstance(default, int):
            value = to_int(key, text, None if lo is None else int(lo),
                           DEFAULT_INT_MAX if hi is None else int(hi))
        elif isinstance(default, float):
            value = to_float(key, text, lo, DEFAULT_FLOAT_MAX if hi is None else hi)
        else:
            value = text
        if choices is not None and value not in choices:
            raise BackendOptionError(
                f"--backend-opts: {key}={value!r} is not one of {', '.join(map(str, choices))}"
            )
        return value

    def take_choice(self, key: str, default: str, choices: tuple[str, ...]) -> str:
        return str(self.take(key, default, choices=choices))

    def finish(self, known: tuple[str, ...] = ()) -> None:
        """Refuse options nobody took."""
        if self.groups:
            where = f"backend '{self.backend}'" if self.backend else "this backend"
            raise BackendOptionError(
                f"--backend-opts: {self.groups[0].label()}: {where} takes no option groups "
                "(groups are for demux, roundrobin and multiplexing)"
            )
        if self.values:
            names = ", ".join(sorted(self.values))
            where = f" for backend '{self.backend}'" if self.backend else ""
            hint = f" (known: {', '.join(known)})" if known else ""
            guesses = [m for name in sorted(self.values) for m in difflib.get_close_matches(name, known, 1)]
            guess = f"; did you mean {', '.join(guesses)}?" if guesses else ""
            raise BackendOptionError(f"--backend-opts: unknown option(s) {names}{where}{guess}{hint}")
