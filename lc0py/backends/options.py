"""``--backend-opts`` / UCI ``BackendOptions``: ``key=value,key=value`` as lc0 takes them.

Each backend declares the options it understands as ``OptionSpec``s; ``BackendOptions.take``
converts and validates one, and ``finish`` refuses anything left over, so a typo is an error
naming the option instead of being silently ignored.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

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


def to_int(key: str, value: str, lo: int | None = None, hi: int | None = None) -> int:
    try:
        n = int(value)
    except ValueError:
        raise BackendOptionError(f"--backend-opts: {key}='{value}' is not an integer") from None
    if (lo is not None and n < lo) or (hi is not None and n > hi):
        raise BackendOptionError(f"--backend-opts: {key}={n} is out of range [{lo}, {hi}]")
    return n


def to_float(key: str, value: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise BackendOptionError(f"--backend-opts: {key}='{value}' is not a number") from None


@dataclass
class BackendOptions:
    """Options given to one backend; consumed with ``take`` and checked with ``finish``."""

    values: dict[str, str]
    backend: str = ""

    @classmethod
    def parse(cls, text: str | dict[str, str] | None, backend: str = "") -> BackendOptions:
        if isinstance(text, dict):
            return cls({k.lower(): str(v) for k, v in text.items()}, backend)
        return cls(parse_backend_options(text), backend)

    def take(self, key: str, default: Any, convert: Callable[[str, str], Any] | None = None) -> Any:
        """Remove ``key`` and return it converted (``convert(key, text)``), or ``default``."""
        if key not in self.values:
            return default
        text = self.values.pop(key)
        if convert is None:
            if isinstance(default, bool):
                return to_bool(key, text)
            if isinstance(default, int):
                return to_int(key, text)
            if isinstance(default, float):
                return to_float(key, text)
            return text
        return convert(key, text)

    def take_choice(self, key: str, default: str, choices: tuple[str, ...]) -> str:
        value = self.take(key, default)
        if value not in choices:
            raise BackendOptionError(f"--backend-opts: {key}='{value}' is not one of {', '.join(choices)}")
        return str(value)

    def finish(self, known: tuple[str, ...] = ()) -> None:
        """Refuse options nobody took."""
        if self.values:
            names = ", ".join(sorted(self.values))
            where = f" for backend '{self.backend}'" if self.backend else ""
            hint = f" (known: {', '.join(known)})" if known else ""
            raise BackendOptionError(f"--backend-opts: unknown option(s) {names}{where}{hint}")
