"""Load an lc0 weights file (``.pb.gz`` or plain protobuf) into a validated network.

``load_proto`` reproduces lc0's container checks (loader.cc: gzip or plain bytes, old formats,
magic, min_version, encoding gate) and its ``FixOlderWeightsFile`` normalisation.
``network_from_proto`` then refuses what lc0py does not run (``UnsupportedNetError``), decides
which body the file holds (``body_of``) and hands it to that body's reader (``attention_reader``,
``residual_reader``: heads selected as lc0 does, docs/weights-format.md §5.3, every array length
checked against the sizes lc0 infers, §6.1). Every failure is one ``Lc0pyError`` line naming the
file and the layer.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from lc0py.errors import WeightsFormatError
from lc0py.storage import reading as storage_reading
from lc0py.weights import gzip_stream, proto
from lc0py.weights.attention_reader import attention_network_from_proto
from lc0py.weights.network import BodyKind, Network, NetworkKind
from lc0py.weights.normalize import fix_older_weights_file
from lc0py.weights.reader import unsupported
from lc0py.weights.residual import RESIDUAL_KINDS, ResidualNetwork
from lc0py.weights.residual_reader import residual_network_from_proto
from lc0py.weights.wire import WireChecker, WireError, WireLimitError

#: The lc0 version whose loader rules lc0py follows (min_version gate, encoding gate).
ENGINE_VERSION = (0, 33, 0)
_ALWAYS_ACCEPTED_VERSION = 0x5C99973  # 97.98.99: "compatible with every lc0"


def version_int(major: int, minor: int, patch: int) -> int:
    """lc0's ``GetVersionInt``: ``major*1000000 + minor*1000 + patch``."""
    return major * 1_000_000 + minor * 1000 + patch


#: Largest decompressed network accepted, in bytes (``LC0PY_MAX_NET_BYTES`` raises it). lc0's
#: biggest published nets (BT4, T82) are 150-400 MB of protobuf once decompressed (LINEAR16; a
#: FLOAT32 copy doubles that); 2 GiB is five times the largest and still refuses a gzip bomb long
#: before it exhausts a machine.
MAX_NET_BYTES = 2 << 30
ENV_MAX_NET_BYTES = "LC0PY_MAX_NET_BYTES"
LAYER_BYTES_FLOOR = 256 << 20
_CHUNK = 1 << 20
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def max_net_bytes() -> int:
    """The decompression cap: ``$LC0PY_MAX_NET_BYTES`` (bytes, or with a k/M/G suffix) or 2 GiB."""
    text = os.environ.get(ENV_MAX_NET_BYTES, "").strip()
    if not text:
        return MAX_NET_BYTES
    number, unit = text.rstrip("kKmMgGtTbB"), text[len(text.rstrip("kKmMgGtTbB")):].lower().rstrip("b")
    try:
        value = int(number) * _UNITS[unit]
    except (ValueError, KeyError):
        raise WeightsFormatError(f"{ENV_MAX_NET_BYTES}={text!r}: expected a size such as 4G") from None
    if value < 1:
        raise WeightsFormatError(f"{ENV_MAX_NET_BYTES}={text!r}: must be positive")
    return value


def open_regular_file(name: str, what: str = "weights file") -> Any:
    """Open ``name`` for reading if it is a regular file (``storage.reading``); else one
    ``WeightsFormatError`` line saying what it is. A FIFO never blocks."""
    return storage_reading.open_regular_file(name, what, WeightsFormatError)


def max_layer_bytes(net_limit: int) -> int:
    """The most bytes one layer's ``params`` may declare: an eighth of the network cap, at least
    256 MiB (or the whole cap when that is smaller); 256 MiB by default. lc0's largest layers hold
    ~10 M values (20 MB as LINEAR16, 40 MB as FLOAT32); a layer declaring more than this is
    refused while the stream is read, before it is kept in memory."""
    return max(net_limit // 8, min(net_limit, LAYER_BYTES_FLOOR))


def _checker(limit: int) -> WireChecker:
    layer_params = (proto.Layer.DESCRIPTOR.full_name, 3)
    return WireChecker(proto.Net.DESCRIPTOR, limit, {layer_params: max_layer_bytes(limit)})


def read_weights_bytes(path: str | os.PathLike[str], max_bytes: int | None = None) -> bytes | bytearray:
    """The decompressed bytes of a weights file (gzip, or plain data passed through like gzread).

    Only regular files are read. Both kinds are read as a stream, chunk by chunk, at most
    ``max_bytes`` (default ``max_net_bytes()``), and the bytes are checked as protobuf wire format
    as they come (``wire.WireChecker``, which also bounds one layer by ``max_layer_bytes``), so a
    gzip bomb, a plain file of zeros or a non-network is refused after its first bytes.
    """
    name = os.fspath(path)
    limit = max_net_bytes() if max_bytes is None else max_bytes
    checker = _checker(limit)
    with open_regular_file(name) as f:
        try:
            magic = f.read(2)
            f.seek(0)
            if magic != b"\x1f\x8b":
                size = os.fstat(f.fileno()).st_size
                if size > limit:
                    raise WeightsFormatError(f"{name}: {size} bytes is larger than the {limit}-byte limit "
                                             f"(set {ENV_MAX_NET_BYTES} to raise it)")
                return _read_plain(name, f, limit, checker)
            return _inflate(name, f, limit, checker)
        except OSError as exc:
            raise WeightsFormatError(f"{name}: cannot read weights file ({exc.strerror or exc})") from None


def _read_plain(name: str, f: Any, limit: int, checker: WireChecker) -> bytearray:
    """A plain (not gzip) file, chunk by chunk, each checked before the next is read."""
    data = bytearray()
    legacy = None
    while chunk := f.read(_CHUNK):
        if len(data) + len(chunk) > limit:  # the file grew after its size was checked
            raise WeightsFormatError(f"{name}: more than the {limit}-byte limit for a network "
                                     f"(set {ENV_MAX_NET_BYTES} to raise it)")
        if legacy is None:
            legacy = len(chunk) >= 2 and chunk[:2] in (b"1\n", b"2\n")  # refused by load_proto
        if not legacy:
            _check_wire(name, checker, chunk)
        data += chunk
    if len(data) >= 2 and not legacy:
        _check_wire(name, checker, b"", final=True)
    return data


def _check_wire(name: str, checker: WireChecker, chunk: bytes, final: bool = False) -> None:
    try:
        checker.feed(chunk)
        if final:
            checker.finish()
    except WireLimitError as exc:
        raise WeightsFormatError(f"{name}: {exc} (set {ENV_MAX_NET_BYTES} to raise it)") from None
    except WireError as exc:
        raise WeightsFormatError(f"{name}: not an lc0 network file (not a protobuf message: {exc})") from None


def _inflate(name: str, f: Any, limit: int, checker: WireChecker) -> bytearray:
    """Inflate a gzip stream (all members, with ``gzread``'s tolerance: ``gzip_stream``) chunk by
    chunk under ``limit``."""
    data = bytearray()  # grown in place: no second copy of the whole net at the end
    legacy = None
    try:
        for chunk in gzip_stream.inflate_chunks(f, _CHUNK):
            if len(data) + len(chunk) > limit:
                raise WeightsFormatError(
                    f"{name}: decompresses to more than {limit} bytes, the limit for a network "
                    f"(set {ENV_MAX_NET_BYTES} to raise it)")
            if legacy is None:
                legacy = chunk[:2] in (b"1\n", b"2\n")
            if not legacy:
                _check_wire(name, checker, chunk)
            data += chunk
    except gzip_stream.GzipTruncated as exc:
        raise WeightsFormatError(f"{name}: truncated gzip data ({exc})") from None
    except gzip_stream.GzipCorrupt as exc:
        raise WeightsFormatError(f"{name}: corrupt gzip data ({exc})") from None
    if not legacy:
        _check_wire(name, checker, b"", final=True)
    return data


def load_proto(path: str | os.PathLike[str]) -> Any:
    """Read, check and normalise a weights file; return the raw ``pblczero.Net`` message.

    Checks, as lc0's loader does: size >= 2, no ``1\\n``/``2\\n`` legacy formats, a parseable
    protobuf, ``magic == 0x1c0``, ``min_version`` not above lc0 0.33.0 (97.98.99 always passes),
    and the encoding gate (weights present, ``weights_encoding != LINEAR16`` needs
    min_version >= 0.33.0). Then applies ``FixOlderWeightsFile`` (docs/weights-format.md §3).
    """
    name = os.fspath(path)
    data = read_weights_bytes(name)
    if len(data) < 2:
        raise WeightsFormatError(f"{name}: invalid weight file: too small")
    if data[:2] == b"1\n":
        raise WeightsFormatError(f"{name}: invalid weight file: version 1 text format is no longer supported")
    if data[:2] == b"2\n":
        raise WeightsFormatError(
            f"{name}: text format weights files are no longer supported (convert to protobuf first)"
        )
    try:
        net = proto.parse_net(data)
    except (proto.DecodeError, ValueError, RuntimeError):
        raise WeightsFormatError(f"{name}: not an lc0 network file (not a protobuf message)") from None
    del data  # the parsed message holds its own copy
    if net.magic != proto.WEIGHT_MAGIC:
        raise WeightsFormatError(
            f"{name}: invalid weight file: bad header "
            f"(magic {net.magic:#x}, expected {proto.WEIGHT_MAGIC:#x})"
        )
    v = net.min_version
    net_ver = version_int(v.major, v.minor, v.patch)
    fix_older_weights_file(net)
    if net_ver != _ALWAYS_ACCEPTED_VERSION and net_ver > version_int(*ENGINE_VERSION):
        raise WeightsFormatError(
            f"{name}: invalid weight file: lc0 version >= v{v.major}.{v.minor}.{v.patch} required "
            f"(lc0py follows lc0 v{'.'.join(map(str, ENGINE_VERSION))})"
        )
    encoding = proto.unknown_varint(net.format, 1)  # a number this schema does not know (e.g. 4)
    if encoding is None:
        encoding = int(net.format.weights_encoding)
    if net.HasField("weights") and encoding != proto.Format.LINEAR16 and net_ver < version_int(0, 33, 0):
        raise WeightsFormatError(
            f"{name}: invalid weight file: unsupported encoding (Format.weights_encoding is not LINEAR16 "
            "and min_version is below 0.33.0)"
        )
    if net.HasField("weights") and net_ver < version_int(0, 33, 0):
        layer = _layer_not_linear16(net.weights, "")
        if layer is not None:
            raise WeightsFormatError(
                f"{name}: {layer[0]} is encoded {layer[1]} in a file for lc0 below 0.33 (min_version "
                f"{v.major}.{v.minor}.{v.patch}): lc0 0.32 ignores layer encodings and reads LINEAR16, "
                f"0.33 reads {layer[1]}; refusing the ambiguity")
    return net


def _layer_not_linear16(msg: Any, prefix: str) -> tuple[str, str] | None:
    """The first layer below ``msg`` whose own ``encoding`` is set and not LINEAR16, with it."""
    for fd, value in msg.ListFields():
        if fd.message_type is None:
            continue
        # older protobuf has only ``label``
        repeated = fd.is_repeated if hasattr(fd, "is_repeated") else fd.label == fd.LABEL_REPEATED
        items = list(enumerate(value)) if repeated else [(None, value)]
        for i, item in items:
            where = f"{prefix}{fd.name}" + ("" if i is None else f"[{i}]")
            if fd.message_type.name == "Layer":
                code = proto.unknown_varint(item, 4)
                code = int(item.encoding) if code is None and item.HasField("encoding") else code
                if code is not None and code != proto.Layer.LINEAR16:
                    names = {2: "FLOAT16", 3: "BFLOAT16", 4: "FLOAT32"}
                    return where, names.get(code, f"as {code}")
            else:
                found = _layer_not_linear16(item, where + ".")
                if found is not None:
                    return found
    return None


def load_network(path: str | os.PathLike[str], policy_head: str = "vanilla",
                 value_head: str = "winner") -> Network | ResidualNetwork:
    """Load ``path`` and return the validated ``Network`` (attention body) or ``ResidualNetwork``
    (classical residual body, ``lc0py.weights.residual``) with the chosen heads.

    Raises ``WeightsFormatError`` (bad or inconsistent file), ``UnsupportedNetError`` (a valid lc0
    network of a kind lc0py does not run) or ``BackendOptionError`` (unknown head name).
    """
    name = os.fspath(path)
    return network_from_proto(load_proto(name), policy_head, value_head, source=name)


# --------------------------------------------------------------------------------------------
# what the file holds


def _check_kind(net: Any, source: str) -> None:
    """Refuse every network kind lc0py does not run, with a plain sentence (docs/weights-format.md §8):
    the checks every body shares, before the body's own (its reader's first step)."""
    nf = net.format.network_format
    w = net.weights
    for fd in nf.DESCRIPTOR.fields:  # enum values this schema does not know: lc0 refuses them too
        unknown = proto.unknown_varint(nf, fd.number)
        if unknown is not None and fd.name != "output":  # lc0 plays any output (not WDL: classical)
            unsupported(source, f"NetworkFormat.{fd.name} = {unknown} is not a value lc0 knows")
    kind = int(nf.network)
    if net.HasField("onnx_model") or kind == NetworkKind.ONNX:
        unsupported(source, "ONNX networks (NETWORK_ONNX) are not supported; "
                    "use the original .pb.gz network")
    if not net.HasField("weights"):
        raise WeightsFormatError(f"{source}: the network has no weights")
    if len(w.residual) > 0 and len(w.encoder) > 0:
        unsupported(source, "hybrid networks (residual convolution tower feeding an attention body) "
                    "are not supported")


def body_of(net: Any) -> BodyKind:
    """Which body a (normalised) ``pblczero.Net`` holds: ``residual`` for a residual tower and no
    attention body (or a residual network format without blocks, refused by its reader), else
    ``attention``."""
    w = net.weights
    kind = int(net.format.network_format.network)
    residual = len(w.encoder) == 0 and (len(w.residual) > 0 or kind in RESIDUAL_KINDS)
    return "residual" if residual else "attention"


#: Each body's reader ``(net, policy_head, value_head, source) -> network``: the one place the
#: weights package reads per body (``writer.py`` and ``presets.py`` keep the matching tables for
#: writing and generating).
_READERS: dict[BodyKind, Callable[[Any, str, str, str], Network | ResidualNetwork]] = {
    "attention": attention_network_from_proto,
    "residual": residual_network_from_proto,
}


def network_from_proto(net: Any, policy_head: str = "vanilla", value_head: str = "winner",
                       source: str = "<network>") -> Network | ResidualNetwork:
    """Build the validated ``Network`` or ``ResidualNetwork`` from a parsed ``pblczero.Net``.

    ``net`` should come from ``load_proto`` (checked and normalised); normalisation is applied
    again here (it is idempotent) so hand-built messages work too. ``source`` prefixes messages.
    """
    fix_older_weights_file(net)
    _check_kind(net, source)
    return _READERS[body_of(net)](net, policy_head, value_head, source)
