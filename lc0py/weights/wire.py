"""A streaming check of protobuf wire format against the ``pblczero.Net`` schema.

Why: a weights file is decompressed as a stream, and a gzip bomb (18 MB of compressed zeros is
18 GB of output) or a file that is not a network at all should be refused after the first bytes,
not after gigabytes have been inflated into memory. ``WireChecker`` is fed the decompressed bytes
chunk by chunk and walks the message tree as the protobuf parser later will: every tag must have
a field number > 0 and a wire type lc0's schema can hold (varint, 64-bit, length-delimited,
32-bit), every length-delimited field must fit inside its enclosing message, and the fields the
schema declares as messages are descended into, so zeros (tag 0) or garbage anywhere are caught
at the byte they start. Unknown fields are skipped, as protobuf does. It keeps only a few bytes of
state: the payload of a ``bytes`` field is skipped, never copied.

``field_limits`` bounds single fields as their length is read (``{("pblczero.Weights.Layer", 3):
n}``: no layer's ``params`` may declare more than ``n`` bytes), so one absurd layer is refused
before the stream holding it is kept in memory (issue 30 item 4).
"""

from __future__ import annotations

from typing import Any

_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5
_FIXED = {_I64: 8, _I32: 4}
_MAX_VARINT_BYTES = 10


class WireError(ValueError):
    """The stream is not protobuf wire format of the expected messages; message says where."""


class WireLimitError(WireError):
    """A field declares more bytes than the limits allow (the stream may well be a network)."""


def _message_fields(descriptor: Any) -> dict[int, Any]:
    """field number -> message descriptor, for the fields of ``descriptor`` that are messages."""
    return {f.number: f.message_type for f in descriptor.fields if f.message_type is not None}


class WireChecker:
    """Feed decompressed chunks with ``feed``; call ``finish`` at the end of the stream."""

    def __init__(self, descriptor: Any, limit: int | None = None,
                 field_limits: dict[tuple[str, int], int] | None = None) -> None:
        self._limit = limit  # a field declaring more bytes than the stream may hold is refused at once
        self._field_limits = field_limits or {}
        self._fields_cache: dict[str, dict[int, Any]] = {}
        # stack of (message fields, absolute end offset or None for the top level, message name)
        self._stack: list[tuple[dict[int, Any], int | None, str]] = [
            (self._fields(descriptor), None, descriptor.full_name)]
        self._pending = b""  # an incomplete tag/varint/fixed value carried to the next chunk
        self._skip = 0  # payload bytes of a length-delimited field still to pass over
        self._pos = 0  # absolute offset of the first byte not yet consumed

    def _fields(self, descriptor: Any) -> dict[int, Any]:
        name = descriptor.full_name
        if name not in self._fields_cache:
            self._fields_cache[name] = _message_fields(descriptor)
        return self._fields_cache[name]

    def feed(self, chunk: bytes) -> None:
        """Consume the next chunk of the stream; raise ``WireError`` at the first bad byte."""
        buf = memoryview(self._pending + bytes(chunk)) if self._pending else memoryview(chunk)
        self._pending = b""
        i = min(self._skip, len(buf))
        self._skip -= i
        self._pos += i
        stop = self._parse(buf, i)
        self._pending = bytes(buf[stop:])  # an incomplete tag/varint/fixed value: at most ~20 bytes

    def _parse(self, buf: memoryview, i: int) -> int:
        """Consume whole items from ``buf[i:]``; return where the first incomplete one starts."""
        n = len(buf)
        while True:
            self._close_finished()
            if i >= n:
                return i
            start = i
            length = 0  # the declared size of a length-delimited item (wire type 2)
            tag, i = _varint(buf, i)
            if tag is None:
                return start
            number, wire = tag >> 3, tag & 7
            if number == 0:
                raise WireError(f"field number 0 at byte {self._pos}")
            if wire == _VARINT:
                value, i = _varint(buf, i)
                if value is None:
                    return start
            elif wire in _FIXED:
                if i + _FIXED[wire] > n:
                    return start
                i += _FIXED[wire]
            elif wire == _LEN:
                declared, i = _varint(buf, i)
                if declared is None:
                    return start
                length = declared
            else:
                raise WireError(f"wire type {wire} (field {number}) at byte {self._pos} is not used by "
                                "lc0's schema")
            where = self._pos
            self._pos += i - start
            parent_fields, parent_end, parent_name = self._stack[-1]
            if wire == _LEN:
                end = self._pos + length
                if self._limit is not None and end > self._limit:
                    raise WireLimitError(f"field {number} at byte {where} declares {length} bytes, more than "
                                         f"the {self._limit}-byte limit for a network")
                field_limit = self._field_limits.get((parent_name, number))
                if field_limit is not None and length > field_limit:
                    raise WireLimitError(f"a layer at byte {where} declares {length} bytes, more than the "
                                         f"{field_limit}-byte limit for one layer")
                if parent_end is not None and end > parent_end:
                    raise WireError(f"field {number} at byte {where} declares {length} bytes, past the end "
                                    "of its message")
                child = parent_fields.get(number)
                if child is not None:
                    self._stack.append((self._fields(child), end, child.full_name))
                    continue
                take = min(length, n - i)
                i += take
                self._pos += take
                self._skip = length - take
                if self._skip:
                    return i
            elif parent_end is not None and self._pos > parent_end:
                raise WireError(f"field {number} at byte {where} runs past the end of its message")

    def _close_finished(self) -> None:
        while len(self._stack) > 1 and self._stack[-1][1] == self._pos:
            self._stack.pop()

    def finish(self) -> None:
        """The stream ended: every message must be complete."""
        self._close_finished()
        if self._pending or self._skip or len(self._stack) > 1:
            raise WireError(f"the data ends inside a field (after {self._pos} bytes)")


def _varint(buf: bytes | memoryview, i: int) -> tuple[int | None, int]:
    """``(value, next index)``, or ``(None, i)`` if the varint is incomplete in ``buf``."""
    value = shift = 0
    n = len(buf)
    for k in range(_MAX_VARINT_BYTES):
        if i + k >= n:
            return None, i
        b = buf[i + k]
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, i + k + 1
        shift += 7
    raise WireError("a varint longer than 10 bytes")
