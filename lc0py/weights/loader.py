"""Load an lc0 weights file (``.pb.gz`` or plain protobuf) into a validated ``Network``.

``load_proto`` reproduces lc0's container checks (loader.cc: gzip or plain bytes, old formats,
magic, min_version, encoding gate) and its ``FixOlderWeightsFile`` normalisation.
``network_from_proto`` then decides what the file holds, refuses what lc0py does not run
(``UnsupportedNetError``), selects the policy/value heads as lc0 does (docs/weights-format.md §5.3),
resolves activations, epsilons and the DeepNorm alpha, and checks every array length against the
sizes lc0 infers (§6.1). Every failure is one ``Lc0pyError`` line naming the file and the layer.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, NoReturn, TypedDict

import numpy as np

from lc0py.errors import BackendOptionError, UnsupportedNetError, WeightsFormatError
from lc0py.storage import reading as storage_reading
from lc0py.weights import gzip_stream, proto
from lc0py.weights.decode import decode_layer, layer_element_count
from lc0py.weights.network import (
    Activation,
    DefaultActivation,
    Dense,
    Embedding,
    EncoderLayer,
    InputEmbedding,
    InputFormat,
    LayerNorm,
    MovesLeftFormat,
    MovesLeftHead,
    Network,
    NetworkFormat,
    NetworkKind,
    OutputFormat,
    PolicyFormat,
    PolicyHead,
    Smolgen,
    ValueFormat,
    ValueHead,
)
from lc0py.weights.normalize import fix_older_weights_file
from lc0py.weights.residual import RESIDUAL_KINDS, ResidualNetwork, is_residual, residual_network_from_proto
from lc0py.weights.wire import WireChecker, WireError, WireLimitError

#: The lc0 version whose loader rules lc0py follows (min_version gate, encoding gate).
ENGINE_VERSION = (0, 33, 0)
_ALWAYS_ACCEPTED_VERSION = 0x5C99973  # 97.98.99: "compatible with every lc0"
_PE_MAP_INPUTS = 176  # 112 planes + 64 positional-encoding columns
_SMOLGEN_EPS = 1e-3
_EMBEDDING_EPS = 1e-3


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
# array access with one-line errors


#: The widest layer lc0py accepts (a bias that defines a width: embedding, FFN, SE, smolgen); lc0's
#: nets stay below 10 000, and a wider one is refused before it is decoded (issue 30 item 4).
MAX_WIDTH = 1 << 20


def _shape_text(shape: tuple[int, ...]) -> str:
    return "x".join(str(d) for d in shape)


class _Reader:
    """Decodes layers and checks their lengths; every error names ``source`` and the layer."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, message: str) -> NoReturn:
        raise WeightsFormatError(f"{self.source}: {message}")

    def values(self, layer: Any, name: str, expected: int | None = None) -> np.ndarray:
        """The decoded values; ``expected`` (element count) is checked before decoding, so a layer
        declaring a gigabyte is refused without allocating it. NaN or infinity is refused."""
        if expected is not None:
            stored = layer_element_count(layer)
            if stored != expected:
                self.fail(self._size_message(name, stored, expected))
        try:
            v = decode_layer(layer, name)
        except WeightsFormatError as exc:
            self.fail(str(exc))
        if v.size and not np.isfinite(v).all():
            bad = int(np.count_nonzero(~np.isfinite(v)))
            self.fail(f"{name} holds {bad} NaN or infinite value(s) (of {v.size})")
        return v

    @staticmethod
    def _size_message(name: str, stored: int, expected: int, shape: tuple[int, ...] = ()) -> str:
        what = f" ({_shape_text(shape)})" if shape else ""
        if stored == 0:
            return f"{name} is missing, expected {expected} values{what}"
        return f"{name} has {stored} values, expected {expected}{what}"

    def width(self, layer: Any, name: str, what: str) -> np.ndarray:
        """A bias whose length defines a layer width; absent -> error (docs/attention-body.md §4.6).
        More than ``MAX_WIDTH`` values is refused before decoding (lc0's widest layer has 8192)."""
        stored = layer_element_count(layer)
        if stored > MAX_WIDTH:
            self.fail(f"{name} has {stored} values; lc0py refuses widths above {MAX_WIDTH} ({what})")
        v = self.values(layer, name)
        if v.size == 0:
            self.fail(f"{name} is missing (lc0 reads {what} from its length)")
        return v

    def array(self, layer: Any, name: str, shape: tuple[int, ...]) -> np.ndarray:
        n = int(np.prod(shape, dtype=np.int64))
        stored = layer_element_count(layer)
        if stored != n:  # before decoding: a wrong size costs nothing
            self.fail(self._size_message(name, stored, n, shape))
        v = self.values(layer, name)
        if v.size != n:
            self.fail(self._size_message(name, v.size, n, shape))
        return v.reshape(shape)

    def optional_bias(self, layer: Any, name: str, n: int) -> np.ndarray | None:
        if layer_element_count(layer) == 0:
            return None
        v = self.values(layer, name, expected=n)
        if v.size != n:
            self.fail(f"{name} has {v.size} values, expected {n}")
        return v

    def dense(self, msg: Any, w: str, b: str, n_in: int, prefix: str, what: str) -> Dense:
        """A dense whose output width is its (required) bias length."""
        bias = self.width(getattr(msg, b), prefix + b, what)
        weight = self.array(getattr(msg, w), prefix + w, (bias.size, n_in))
        return Dense(weight, bias)

    def layer_norm(self, msg: Any, gammas: str, betas: str, n: int, eps: float, prefix: str) -> LayerNorm:
        return LayerNorm(
            self.array(getattr(msg, gammas), prefix + gammas, (n,)),
            self.array(getattr(msg, betas), prefix + betas, (n,)),
            eps,
        )


# --------------------------------------------------------------------------------------------
# what the file holds


def _unsupported(source: str, message: str) -> NoReturn:
    raise UnsupportedNetError(f"{source}: {message}")


def _check_heads_and_activation(nf: Any, source: str) -> None:
    """The value, moves-left and default-activation formats every body shares (attention and
    residual): what lc0 0.32 runs, else one line naming the field."""
    value = int(nf.value)
    if value == ValueFormat.PARAM:
        _unsupported(source, "VALUE_PARAM value heads are not supported (by lc0 either)")
    if value not in (ValueFormat.CLASSICAL, ValueFormat.WDL):
        _unsupported(source, f"value format {_enum_name(ValueFormat, value)} is not supported")
    if int(nf.moves_left) not in (MovesLeftFormat.NONE, MovesLeftFormat.V1):
        _unsupported(source, f"moves-left format {int(nf.moves_left)} is not supported")
    if int(nf.default_activation) not in (DefaultActivation.RELU, DefaultActivation.MISH):
        _unsupported(source, f"default activation {int(nf.default_activation)} is not supported")


def _check_kind(net: Any, source: str) -> None:
    """Refuse every network kind lc0py does not run, with a plain sentence (docs/weights-format.md §8)."""
    nf = net.format.network_format
    w = net.weights
    for fd in nf.DESCRIPTOR.fields:  # enum values this schema does not know: lc0 refuses them too
        unknown = proto.unknown_varint(nf, fd.number)
        if unknown is not None and fd.name != "output":  # lc0 plays any output (not WDL: classical)
            _unsupported(source, f"NetworkFormat.{fd.name} = {unknown} is not a value lc0 knows")
    kind = int(nf.network)
    if net.HasField("onnx_model") or kind == NetworkKind.ONNX:
        _unsupported(source, "ONNX networks (NETWORK_ONNX) are not supported; "
                     "use the original .pb.gz network")
    if not net.HasField("weights"):
        raise WeightsFormatError(f"{source}: the network has no weights")
    if len(w.residual) > 0 and len(w.encoder) > 0:
        _unsupported(source, "hybrid networks (residual convolution tower feeding an attention body) "
                     "are not supported")
    if is_residual(net):
        if kind not in RESIDUAL_KINDS:  # 0 (lc0: "NETWORK_UNKNOWN is not supported"), or 6/7 on a
            # residual tower, which lc0 runs as a hybrid without encoders: not a residual net
            _unsupported(source, f"network format {_enum_name(NetworkKind, kind)} does not describe the "
                         "residual tower this file holds (lc0 refuses or runs it as another net)")
        return  # lc0py.weights.residual checks the rest
    if kind not in (NetworkKind.ATTENTIONBODY_WITH_HEADFORMAT,
                    NetworkKind.ATTENTIONBODY_WITH_MULTIHEADFORMAT):
        _unsupported(source, f"network format {_enum_name(NetworkKind, kind)} is not supported")
    policy = int(nf.policy)
    if policy in (PolicyFormat.CONVOLUTION, PolicyFormat.CLASSICAL):
        _unsupported(source, f"{_enum_name(PolicyFormat, policy).lower()} policy is not supported with an "
                     "attention body")
    if policy != PolicyFormat.ATTENTION:
        _unsupported(source, f"policy format {_enum_name(PolicyFormat, policy)} is not supported")
    _check_heads_and_activation(nf, source)
    if int(nf.input_embedding) not in (InputEmbedding.NONE, InputEmbedding.PE_MAP, InputEmbedding.PE_DENSE):
        _unsupported(source, f"input embedding {int(nf.input_embedding)} is not supported")
    if len(w.encoder) == 0:
        raise WeightsFormatError(f"{source}: attention-body network has no encoder layers")
    for i, layer in enumerate(w.encoder):
        if any(layer.mha.HasField(f) for f in ("rpe_q", "rpe_k", "rpe_v")):
            _unsupported(source, f"encoder[{i}] has RPE (relative position encoding) weights; "
                         "RPE networks are not supported (by lc0 either)")


def _enum_name(enum_cls: Any, value: int) -> str:
    try:
        return str(enum_cls(value).name)
    except ValueError:
        return str(value)


def _resolve(source: str, stored: int, default: Activation, what: str) -> Activation:
    try:
        act = Activation(stored)
    except ValueError:
        _unsupported(source, f"{what} activation {stored} is not supported")
    if act == Activation.DEFAULT:
        return default
    if act == Activation.SOFTMAX:
        _unsupported(source, f"SOFTMAX is not supported as {what} activation (lc0 refuses it too)")
    return act


# --------------------------------------------------------------------------------------------
# heads (docs/weights-format.md §5.3)

_POLICY_EXTRA = (("optimistic", "optimistic_st"), ("soft", "soft"), ("opponent", "opponent"))
_VALUE_EXTRA = (("q", "q"), ("st", "st"))


class _PolicySource:
    """Where one policy head's fields live, and which ``ip_pol_w``/``ip_pol_b`` layers it uses.

    lc0 (``MultiHeadWeights``): the shared embedding weight is ``policy_heads.ip_pol_w`` if that
    field is set, else the top-level ``ip_pol_w`` (the bias likewise, decided separately); a head's
    own non-empty ``ip_pol_w`` (or ``ip_pol_b``) replaces the shared one.
    """

    def __init__(self, msg: Any, prefix: str, emb_w: tuple[Any, str], emb_b: tuple[Any, str]) -> None:
        self.msg, self.prefix, self.emb_w, self.emb_b = msg, prefix, emb_w, emb_b


def _policy_sources(w: Any, source: str) -> dict[str, _PolicySource]:
    ph = w.policy_heads
    shared_w = (ph.ip_pol_w, "policy_heads.ip_pol_w") if ph.HasField("ip_pol_w") else (w.ip_pol_w, "ip_pol_w")
    shared_b = (ph.ip_pol_b, "policy_heads.ip_pol_b") if ph.HasField("ip_pol_b") else (w.ip_pol_b, "ip_pol_b")

    def source_for(head: Any, prefix: str) -> _PolicySource:
        own_w = (head.ip_pol_w, prefix + "ip_pol_w") if len(head.ip_pol_w.params) else shared_w
        own_b = (head.ip_pol_b, prefix + "ip_pol_b") if len(head.ip_pol_b.params) else shared_b
        return _PolicySource(head, prefix, own_w, own_b)

    if w.HasField("policy_heads"):
        heads = {"vanilla": source_for(ph.vanilla, "policy_heads.vanilla.")}
        for key, field in _POLICY_EXTRA:
            if ph.HasField(field):
                heads[key] = source_for(getattr(ph, field), f"policy_heads.{field}.")
        return heads
    if not (w.HasField("policy") or w.HasField("policy1") or w.HasField("ip_pol_w")):
        raise WeightsFormatError(f"{source}: could not find valid policy head weights")
    return {"vanilla": _PolicySource(w, "", shared_w, shared_b)}


def _value_sources(w: Any, source: str) -> dict[str, tuple[Any, str]]:
    if w.HasField("value_heads"):
        vh = w.value_heads
        heads = {"winner": (vh.winner, "value_heads.winner.")}
        for key, field in _VALUE_EXTRA:
            if vh.HasField(field):
                heads[key] = (getattr(vh, field), f"value_heads.{field}.")
        return heads
    if not (w.HasField("value") or w.HasField("ip_val_w")):
        raise WeightsFormatError(f"{source}: could not find valid value head weights")
    return {"winner": (w, "")}


def _select(kind: str, name: str, available: dict[str, Any]) -> Any:
    if name not in available:
        raise BackendOptionError(
            f"The {kind} head you specified '{name}' does not exist in this net "
            f"(available: {', '.join(available)})"
        )
    return available[name]


def _build_policy(r: _Reader, src: _PolicySource, e: int, key: str) -> PolicyHead:
    m, p = src.msg, src.prefix
    if len(m.pol_encoder) > 0:
        _unsupported(r.source, f"{p}pol_encoder: policy encoder layers are not supported on attention bodies")
    if layer_element_count(m.ip2_pol_b) == 0:  # counted: nothing is decoded before its size is checked
        r.fail(f"the policy head selected '{key}' is empty ({p}ip2_pol_b is missing)")
    emb_b = r.width(src.emb_b[0], src.emb_b[1], "the policy embedding size Pe")
    emb = Dense(r.array(src.emb_w[0], src.emb_w[1], (emb_b.size, e)), emb_b)
    pe = emb.n_out
    wq = r.dense(m, "ip2_pol_w", "ip2_pol_b", pe, p, "the policy d_model Pd")
    pd = wq.n_out
    wk = Dense(r.array(m.ip3_pol_w, p + "ip3_pol_w", (pd, pe)),
               r.optional_bias(m.ip3_pol_b, p + "ip3_pol_b", pd))
    promo = r.array(m.ip4_pol_w, p + "ip4_pol_w", (4, pd))
    return PolicyHead(emb, wq, wk, promo)


def _build_value(r: _Reader, msg: Any, prefix: str, e: int, wdl: bool, key: str) -> ValueHead:
    _require_value_head(r, msg, prefix, key)
    emb = r.dense(msg, "ip_val_w", "ip_val_b", e, prefix, "the value embedding channels")
    return ValueHead(emb, *_value_dense(r, msg, prefix, 64 * emb.n_out, wdl))


def _require_value_head(r: _Reader, msg: Any, prefix: str, key: str) -> None:
    """Fail when the selected value head has no weights (either body)."""
    if layer_element_count(msg.ip1_val_b) == 0:
        r.fail(f"the value head selected '{key}' is empty ({prefix}ip1_val_b is missing)")


def _value_dense(r: _Reader, msg: Any, prefix: str, n_in: int, wdl: bool) -> tuple[Dense, Dense]:
    """The value head's dense layers after its embedding or convolution (either body): ``ip1_val``
    (``n_in`` = 64 x channels -> hidden), ``ip2_val`` (hidden -> 3 WDL logits, or 1 for tanh)."""
    fc1 = r.dense(msg, "ip1_val_w", "ip1_val_b", n_in, prefix, "the value hidden size")
    n_out = 3 if wdl else 1
    w2 = r.array(msg.ip2_val_w, prefix + "ip2_val_w", (n_out, fc1.n_out))
    if wdl:
        b2 = r.optional_bias(msg.ip2_val_b, prefix + "ip2_val_b", 3)
    else:  # lc0 reads the tanh head's bias unconditionally
        b2 = r.array(msg.ip2_val_b, prefix + "ip2_val_b", (1,))
    return fc1, Dense(w2, b2)


def _build_heads(r: _Reader, sources: dict[str, Any], selected: str,
                 build: Callable[[Any, str], Any]) -> tuple[Any, dict[str, Any]]:
    """Build the selected head (errors are fatal) and every other one (skipped if unusable)."""
    chosen = build(sources[selected], selected)
    all_heads = {selected: chosen}
    for key, src in sources.items():
        if key == selected:
            continue
        try:
            all_heads[key] = build(src, key)
        except (WeightsFormatError, UnsupportedNetError):
            continue  # lc0 never looks at heads that are not selected
    return chosen, {k: all_heads[k] for k in sources if k in all_heads}


# --------------------------------------------------------------------------------------------
# body


def _build_embedding(r: _Reader, w: Any, kind: InputEmbedding) -> Embedding:
    b = r.width(w.ip_emb_b, "ip_emb_b", "the embedding size E")
    e = b.size
    if kind == InputEmbedding.PE_DENSE:
        pre_b = r.width(w.ip_emb_preproc_b, "ip_emb_preproc_b", "the PE_DENSE size dE")
        if pre_b.size % 64:
            r.fail(f"ip_emb_preproc_b has {pre_b.size} values, expected a multiple of 64")
        preproc = Dense(r.array(w.ip_emb_preproc_w, "ip_emb_preproc_w", (pre_b.size, 64 * 12)), pre_b)
        cin = 112 + pre_b.size // 64
    else:
        preproc = None
        cin = _PE_MAP_INPUTS
    emb = Embedding(kind=kind, dense=Dense(r.array(w.ip_emb_w, "ip_emb_w", (e, cin)), b), preproc=preproc)
    if layer_element_count(w.ip_mult_gate) and layer_element_count(w.ip_add_gate):  # blas/CUDA: both
        emb.mult_gate = r.array(w.ip_mult_gate, "ip_mult_gate", (e, 64))
        emb.add_gate = r.array(w.ip_add_gate, "ip_add_gate", (e, 64))
    if kind == InputEmbedding.PE_DENSE:
        emb.ln = r.layer_norm(w, "ip_emb_ln_gammas", "ip_emb_ln_betas", e, _EMBEDDING_EPS, "")
        ffn = w.ip_emb_ffn
        emb.ffn1 = r.dense(ffn, "dense1_w", "dense1_b", e, "ip_emb_ffn.", "the embedding FFN size Fe")
        emb.ffn2 = Dense(
            r.array(ffn.dense2_w, "ip_emb_ffn.dense2_w", (e, emb.ffn1.n_out)),
            r.array(ffn.dense2_b, "ip_emb_ffn.dense2_b", (e,)),
        )
        emb.ffn_ln = r.layer_norm(w, "ip_emb_ffn_ln_gammas", "ip_emb_ffn_ln_betas", e, _EMBEDDING_EPS, "")
    return emb


def _build_encoder(r: _Reader, layer: Any, i: int, e: int, heads: int, d_model: int, eps: float,
                   gs: int | None) -> EncoderLayer:
    p = f"encoder[{i}]."
    mha, ffn = layer.mha, layer.ffn
    q = r.dense(mha, "q_w", "q_b", e, p + "mha.", "the attention width D")
    d = q.n_out
    if d != d_model:
        r.fail(f"{p}mha.q_b has {d} values, expected {d_model} (D of encoder[0])")
    k = Dense(r.array(mha.k_w, p + "mha.k_w", (d, e)), r.optional_bias(mha.k_b, p + "mha.k_b", d))
    v = Dense(r.array(mha.v_w, p + "mha.v_w", (d, e)), r.optional_bias(mha.v_b, p + "mha.v_b", d))
    out = Dense(r.array(mha.dense_w, p + "mha.dense_w", (e, d)),
                r.optional_bias(mha.dense_b, p + "mha.dense_b", e))
    ln1 = r.layer_norm(layer, "ln1_gammas", "ln1_betas", e, eps, p)
    ffn1 = r.dense(ffn, "dense1_w", "dense1_b", e, p + "ffn.", "the FFN size Fd")
    ffn2 = Dense(r.array(ffn.dense2_w, p + "ffn.dense2_w", (e, ffn1.n_out)),
                 r.width(ffn.dense2_b, p + "ffn.dense2_b", "the FFN output width"))
    if ffn2.b is not None and ffn2.b.size != e:
        r.fail(f"{p}ffn.dense2_b has {ffn2.b.size} values, expected {e}")
    ln2 = r.layer_norm(layer, "ln2_gammas", "ln2_betas", e, eps, p)
    smolgen = None
    if mha.HasField("smolgen"):
        if gs is None:
            r.fail(f"{p}mha.smolgen is present but the global smolgen_w is missing")
        smolgen = _build_smolgen(r, mha.smolgen, p + "mha.smolgen.", e, heads, gs)
    return EncoderLayer(q, k, v, out, ln1, ffn1, ffn2, ln2, smolgen)


def _build_smolgen(r: _Reader, s: Any, p: str, e: int, heads: int, gs: int) -> Smolgen:
    stored = layer_element_count(s.compress)  # decoded once dense1 agrees with its size
    if stored == 0 or stored % e:
        r.fail(f"{p}compress has {stored} values, expected a non-zero multiple of {e} (hc x E)")
    hc = stored // e
    dense1 = r.dense(s, "dense1_w", "dense1_b", 64 * hc, p, "the smolgen hidden size")
    compress = r.values(s.compress, p + "compress", expected=stored)
    ln1 = r.layer_norm(s, "ln1_gammas", "ln1_betas", dense1.n_out, _SMOLGEN_EPS, p)
    b2 = r.width(s.dense2_b, p + "dense2_b", "heads x smolgen gen size")
    if b2.size != heads * gs:
        r.fail(f"{p}dense2_b has {b2.size} values, expected {heads * gs} ({heads} heads x gen size {gs})")
    dense2 = Dense(r.array(s.dense2_w, p + "dense2_w", (b2.size, dense1.n_out)), b2)
    ln2 = r.layer_norm(s, "ln2_gammas", "ln2_betas", b2.size, _SMOLGEN_EPS, p)
    return Smolgen(compress.reshape(hc, e), dense1, ln1, dense2, ln2)


def network_from_proto(net: Any, policy_head: str = "vanilla", value_head: str = "winner",
                       source: str = "<network>") -> Network | ResidualNetwork:
    """Build the validated ``Network`` from a parsed ``pblczero.Net``.

    ``net`` should come from ``load_proto`` (checked and normalised); normalisation is applied
    again here (it is idempotent) so hand-built messages work too. ``source`` prefixes messages.
    """
    fix_older_weights_file(net)
    _check_kind(net, source)
    if is_residual(net):
        return residual_network_from_proto(net, policy_head, value_head, source)
    r = _Reader(source)
    nf, w = net.format.network_format, net.weights

    default_act = Activation.MISH if nf.default_activation == DefaultActivation.MISH else Activation.RELU
    ffn_act = _resolve(source, int(nf.ffn_activation), default_act, "FFN")
    smolgen_act = _resolve(source, int(nf.smolgen_activation), default_act, "smolgen")
    stored_embedding = InputEmbedding(int(nf.input_embedding))
    # NONE without a residual tower runs as PE_MAP in lc0's blas/CUDA backends (docs/attention-body.md §3.3)
    kind = InputEmbedding.PE_DENSE if stored_embedding == InputEmbedding.PE_DENSE else InputEmbedding.PE_MAP
    eps = 1e-3 if kind == InputEmbedding.PE_DENSE else 1e-6

    embedding = _build_embedding(r, w, kind)
    e = embedding.dense.n_out
    heads = int(w.headcount)
    if heads <= 0:
        r.fail("headcount is missing or zero")
    d_model = r.width(w.encoder[0].mha.q_b, "encoder[0].mha.q_b", "the attention width D").size
    if d_model % heads:
        r.fail(f"headcount {heads} does not divide the attention width D = {d_model}")
    smolgen_w = None
    gs = None
    if any(layer.mha.HasField("smolgen") for layer in w.encoder):
        stored = layer_element_count(w.smolgen_w)
        if stored == 0:
            r.fail("smolgen_w is missing (the encoder layers have smolgen)")
        if stored % 4096:
            r.fail(f"smolgen_w has {stored} values, expected a non-zero multiple of 4096 (4096 x gen size)")
        if stored // 4096 > MAX_WIDTH:  # gen size x heads is a width (dense2_b): refused before decoding
            r.fail(f"smolgen_w has {stored} values; a gen size of {stored // 4096} is above {MAX_WIDTH}")
        sw = r.values(w.smolgen_w, "smolgen_w", expected=stored)
        gs = sw.size // 4096
        smolgen_w = sw.reshape(4096, gs)
    encoders = [_build_encoder(r, layer, i, e, heads, d_model, eps, gs) for i, layer in enumerate(w.encoder)]

    policy_sources = _policy_sources(w, source)
    value_sources = _value_sources(w, source)
    _select("policy", policy_head, policy_sources)
    _select("value", value_head, value_sources)
    wdl = int(nf.value) == ValueFormat.WDL
    policy, all_policy = _build_heads(r, policy_sources, policy_head,
                                      lambda src, key: _build_policy(r, src, e, key))
    value, all_value = _build_heads(r, value_sources, value_head,
                                    lambda src, key: _build_value(r, src[0], src[1], e, wdl, key))

    moves_left = None
    if int(nf.moves_left) == MovesLeftFormat.V1 and has_moves_left_weights(w, "ip_mov_w", "ip_mov_b"):
        emb = r.dense(w, "ip_mov_w", "ip_mov_b", e, "", "the moves-left embedding channels")
        moves_left = MovesLeftHead(emb, *_moves_left_dense(r, w, 64 * emb.n_out))

    return Network(
        format=_network_format(nf, source, stored_embedding, moves_left is not None),
        embedding=embedding,
        encoders=encoders,
        heads=heads,
        smolgen_w=smolgen_w,
        policy=policy,
        value=value,
        moves_left=moves_left,
        default_act=default_act,
        ffn_act=ffn_act,
        smolgen_act=smolgen_act,
        alpha=float((2.0 * len(encoders)) ** -0.25),
        encoder_eps=eps,
        **_metadata(net, (policy_head, policy_sources, all_policy), (value_head, value_sources, all_value)),
    )


_MOVES_LEFT_DENSE = ("ip1_mov_w", "ip1_mov_b", "ip2_mov_w", "ip2_mov_b")


def has_moves_left_weights(w: Any, *layers: str) -> bool:
    """Whether any moves-left layer is stored (the body's ``layers`` or the dense ones; a ConvBlock
    counts by its weights). lc0 plays ``moves_left = V1`` without any of them, with m = 0; lc0py
    then loads the net without a moves-left head (docs/weights-format.md §11)."""
    for name in (*layers, *_MOVES_LEFT_DENSE):
        field = getattr(w, name)
        layer = field.weights if hasattr(field, "bn_means") else field
        if layer_element_count(layer):
            return True
    return False


def _moves_left_dense(r: _Reader, w: Any, n_in: int) -> tuple[Dense, Dense]:
    """The moves-left head's dense layers after its embedding (attention body) or convolution
    (residual body): ``ip1_mov`` (``n_in`` = 64 x channels -> hidden), ``ip2_mov`` (hidden -> 1)."""
    fc1 = r.dense(w, "ip1_mov_w", "ip1_mov_b", n_in, "", "the moves-left hidden size")
    fc2 = Dense(r.array(w.ip2_mov_w, "ip2_mov_w", (1, fc1.n_out)),
                r.optional_bias(w.ip2_mov_b, "ip2_mov_b", 1))
    return fc1, fc2


def _network_format(nf: Any, source: str, input_embedding: InputEmbedding,
                    has_moves_left: bool = True) -> NetworkFormat:
    """The stored ``network_format`` as lc0py's enums (an output lc0py does not know is UNKNOWN);
    ``input_embedding`` as the body reads it."""
    output = proto.unknown_varint(nf, 2)  # a number the schema lacks (lc0 plays it: not WDL)
    output = int(nf.output) if output is None else output
    return NetworkFormat(
        input=_input_format(source, int(nf.input)),
        output=OutputFormat(output) if output in (0, 1, 2) else OutputFormat.UNKNOWN,
        network=NetworkKind(int(nf.network)),
        policy=PolicyFormat(int(nf.policy)),
        value=ValueFormat(int(nf.value)),
        moves_left=MovesLeftFormat(int(nf.moves_left)) if has_moves_left else MovesLeftFormat.NONE,
        default_activation=DefaultActivation(int(nf.default_activation)),
        smolgen_activation=Activation(int(nf.smolgen_activation)),
        ffn_activation=Activation(int(nf.ffn_activation)),
        input_embedding=input_embedding,
    )


class _Metadata(TypedDict):
    """``BaseNetwork``'s keyword fields as the loader fills them for either body."""

    min_version: tuple[int, int, int]
    policy_head_name: str
    value_head_name: str
    available_policy_heads: tuple[str, ...]
    available_value_heads: tuple[str, ...]
    license: str
    extra: dict[str, object]


_Heads = tuple[str, dict[str, Any], dict[str, Any]]


def _metadata(net: Any, policy: _Heads, value: _Heads) -> _Metadata:
    """Version gate, license and heads. ``policy`` and ``value`` are each (the selected name, the
    heads the net stores by name, the heads that built: ``_build_heads``'s second result, kept in
    ``extra``)."""
    v = net.min_version
    (policy_head, policy_sources, all_policy), (value_head, value_sources, all_value) = policy, value
    return _Metadata(
        min_version=(int(v.major), int(v.minor), int(v.patch)),
        policy_head_name=policy_head,
        value_head_name=value_head,
        available_policy_heads=tuple(policy_sources),
        available_value_heads=tuple(value_sources),
        license=str(net.license),
        extra={"policy_heads": all_policy, "value_heads": all_value},
    )


def _input_format(source: str, value: int) -> InputFormat:
    try:
        fmt = InputFormat(value)
    except ValueError:
        _unsupported(source, f"input format {value} is not supported")
    if fmt == InputFormat.UNKNOWN:  # lc0 refuses it too: no encoder knows what the planes mean
        _unsupported(source, "input format 0 (INPUT_UNKNOWN) is not supported")
    return fmt
