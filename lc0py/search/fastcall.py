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

Across searches (every ``Search`` makes new call sites, about ten, each resolving once): the entry
point found for a dispatcher and argument types is kept in ``_ENTRIES`` under a signature of the
arguments (``signature``: what numba's typing reads of each array -- dtype, dimensions, layout
flags, writeability, alignment -- and the classes of tuples and scalars), so a new call site
finds it without numba's typing, which took 1.5 ms for the gather's arguments alone (TreeArrays,
Positions, Requests, the cache's tuple), twice per call site and search.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

CHECK = False  # tests: verify every call's types against the resolved overload

# (dispatcher, signature of the arguments) -> (entry point, numba's types of them)
_ENTRIES: dict[tuple[Any, ...], tuple[Callable[..., Any], tuple[Any, ...]]] = {}
_INT64 = (-(1 << 63), 1 << 63)


def _signature_of(a: Any) -> Any:
    """What numba's ``typeof`` reads of ``a`` (TypeError for what this does not cover)."""
    t = type(a)
    if t is np.ndarray:
        f = a.flags
        return (a.dtype.str, a.ndim, f.c_contiguous, f.f_contiguous, f.writeable, f.aligned)
    if t is int:  # int64, or another type past its range
        return (int, _INT64[0] <= a < _INT64[1])
    if t is float or t is bool or isinstance(a, np.generic):
        return t
    if isinstance(a, tuple):
        return (t, *(_signature_of(x) for x in a))
    raise TypeError(t)


def signature(args: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """``args``' key in ``_ENTRIES`` (None: an argument ``_signature_of`` does not cover)."""
    try:
        return tuple(_signature_of(a) for a in args)
    except TypeError:
        return None


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
        sig = signature(args)
        known = _ENTRIES.get((dispatcher, sig)) if sig is not None else None
        if known is not None:  # resolved by an earlier call site (search) for these types
            self._entry, self._key = known
            if CHECK:
                self._check(args)
            return self._entry(*args)
        result = dispatcher(*args)  # compiles for these types if need be
        overloads = getattr(dispatcher, "overloads", None)
        entry: Callable[..., Any] = dispatcher
        if overloads is not None:
            key = self._types(args)
            compiled = overloads.get(key)
            if compiled is not None:
                entry, self._key = compiled.entry_point, key
                if sig is not None:
                    _ENTRIES[(dispatcher, sig)] = (entry, key)
        self._entry = entry
        return result

    def _check(self, args: tuple[Any, ...]) -> None:
        if self._key is not None and self._types(args) != self._key:
            name = getattr(self._dispatcher, "__name__", "?")
            raise TypeError(f"{name}: argument types changed at a resolved call site: {self._types(args)}")
