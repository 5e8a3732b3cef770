"""Inflate a gzip file chunk by chunk with the tolerance of zlib's ``gzread``, which lc0 reads with.

What lc0 0.32.1 accepts and lc0py therefore accepts (docs/weights-format.md, "Where lc0py and lc0
differ"): a member whose deflate stream ended but whose 8-byte trailer (CRC-32, size) is missing
or cut short (the data is complete; only its checksum is absent), and bytes after a member that
are not another gzip member (ignored, as ``gzread`` ignores trailing garbage). What both refuse: a
deflate stream that ends early (the data would be incomplete), a whole trailer whose CRC or size
disagrees with the data, a header that is not gzip's. Several members are read one after the
other, as ``gzread`` does.

Memory: one input piece (``piece`` bytes) and one output chunk at a time; the caller decides what
to keep.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from typing import BinaryIO

MAGIC = b"\x1f\x8b"
_MAX_HEADER = 1 << 20  # a file name or extra field longer than this is not a weights file's
_FTEXT, _FHCRC, _FEXTRA, _FNAME, _FCOMMENT = 1, 2, 4, 8, 16


class GzipTruncated(ValueError):
    """The file ends inside a gzip header or inside the compressed data."""


class GzipCorrupt(ValueError):
    """The gzip data is wrong (bad header, deflate error, CRC or size mismatch)."""


def _header_length(buf: bytes) -> int | None:
    """Length of the gzip header at the start of ``buf``, or ``None`` if ``buf`` ends inside it."""
    if len(buf) < 10:
        return None
    if buf[2] != 8:
        raise GzipCorrupt(f"unknown compression method {buf[2]}")
    flags = buf[3]
    i = 10
    if flags & _FEXTRA:
        if len(buf) < i + 2:
            return None
        i += 2 + struct.unpack_from("<H", buf, i)[0]
    for flag in (_FNAME, _FCOMMENT):
        if flags & flag:
            end = buf.find(b"\0", i)
            if end < 0:
                return None
            i = end + 1
    if flags & _FHCRC:
        i += 2
    return i if len(buf) >= i else None


def inflate_chunks(f: BinaryIO, chunk: int = 1 << 20, piece: int = 1 << 20) -> Iterator[bytes]:
    """Yield the decompressed bytes of gzip file ``f`` (opened, at offset 0) in chunks of at most
    ``chunk`` bytes; raise ``GzipTruncated`` or ``GzipCorrupt`` as the module docstring says."""
    buf = b""
    at_end = False

    def more() -> bool:
        nonlocal buf, at_end
        if at_end:
            return False
        data = f.read(piece)
        if not data:
            at_end = True
            return False
        buf += data
        return True

    first = True
    while True:
        while len(buf) < 2 and more():
            pass
        if len(buf) < 2 or buf[:2] != MAGIC:
            if first:
                raise GzipCorrupt("not a gzip header")
            return  # after a whole member: trailing bytes that are no member are ignored (gzread)
        while (length := _header_length(buf)) is None:
            if len(buf) > _MAX_HEADER:
                raise GzipCorrupt("a gzip header longer than 1 MiB")
            if not more():
                if first:
                    raise GzipTruncated("the file ends inside the gzip header")
                return  # an incomplete header after a whole member: ignored, as gzread does
        pending, buf = buf[length:], b""
        inflater = zlib.decompressobj(-zlib.MAX_WBITS)
        crc = size = 0
        while not inflater.eof:
            if not pending:
                data = f.read(piece) if not at_end else b""
                if not data:
                    raise GzipTruncated("the file ends inside the compressed data")
                pending = data
            try:
                out = inflater.decompress(pending, chunk)
            except zlib.error as exc:
                raise GzipCorrupt(str(exc)) from None
            pending = inflater.unconsumed_tail
            if out:
                crc = zlib.crc32(out, crc)
                size += len(out)
                yield out
        buf = inflater.unused_data + pending
        while len(buf) < 8 and more():
            pass
        if len(buf) < 8:
            return  # the deflate stream ended but the trailer is missing or cut short: accepted
        stored_crc, stored_size = struct.unpack_from("<II", buf)
        if stored_crc != crc:
            raise GzipCorrupt(f"CRC check failed ({stored_crc:#010x} stored, {crc:#010x} computed)")
        if stored_size != size & 0xFFFFFFFF:
            raise GzipCorrupt(f"size check failed ({stored_size} stored, {size & 0xFFFFFFFF} inflated)")
        buf = buf[8:]
        first = False
