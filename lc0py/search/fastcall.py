"""Calls into the compiled search core without numba's per-call type matching.

A numba dispatcher types every argument of every call to pick the machine code for them. For the
core's tuples of arrays (``TreeArrays``: 18 arrays, the NN cache's and the positions' tuples) that
is done in Python, element by element: 20-41 us a call on a loaded 2-core machine, about ten
calls a minibatch. A call site of the search worker passes the same types on every call of one
search, so ``Resolved`` asks the dispatcher once (the first call, which also compiles if need
be), looks up the machine code numba chose for exactly those types (``overloads[types]``) and
calls its entry point from then on: the same compiled code, without the matching (~10 us).

Contract: one ``Resolved`` serves one call site whose argument types never change (the scalars
converted explicitly: ``int``, ``float``, ``bool``); the entry point would not notice an array
of another dtype or layout. ``CHECK = True`` (tests) re-types every call and raises when a call
site breaks the contract. Where no exact overload is found (numba converted an argument, or
``NUMBA_DISABLE_JIT`` left a plain function), every call goes through the dispatcher as before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

CHECK = False  # tests: verify every call's types against the resolved overload


class Resolved:
    """``dispatcher(*args)``, through the entry point resolved at the first call."""

    __slots__ = ("_dispatcher", "_entry", "_key")

    def __init__(self, dispatcher: Callable[..., Any]) -> None:
        self._dispatcher = dispatcher
        self._entry: Callable[..., Any] | None = None
        self._key: tuple[Any, ...] | None = None

    def __call__(self, *args: Any) -> Any:
        entry = self._entry
        if entry is None:
            return self._resolve(args)
        if CHECK:
            self._check(args)
        return entry(*args)

    def _types(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        typeof = self._dispatcher.typeof_pyval  # type: ignore[attr-defined]
        return tuple(typeof(a) for a in args)

    def _resolve(self, args: tuple[Any, ...]) -> Any:
        dispatcher = self._dispatcher
        result = dispatcher(*args)  # compiles for these types if need be
        overloads = getattr(dispatcher, "overloads", None)
        entry: Callable[..., Any] = dispatcher
        if overloads is not None:
            key = self._types(args)
            compiled = overloads.get(key)
            if compiled is not None:
                entry, self._key = compiled.entry_point, key
        self._entry = entry
        return result

    def _check(self, args: tuple[Any, ...]) -> None:
        if self._key is not None and self._types(args) != self._key:
            name = getattr(self._dispatcher, "__name__", "?")
            raise TypeError(f"{name}: argument types changed at a resolved call site: {self._types(args)}")
