"""Reading a parsed ``pblczero.Net`` into lc0py's types: what every network body shares.

* ``LayerReader`` decodes one ``Weights.Layer`` at a time and checks its length against the size lc0
  infers (docs/weights-format.md §6.1) before decoding, so a wrong or huge layer costs nothing;
  every error is one ``WeightsFormatError`` line naming the file and the layer;
* ``unsupported`` is the one ``UnsupportedNetError`` line for a valid net lc0py does not run;
* ``read_encoder_layer`` reads a post-LN encoder layer (the attention body's, and the policy
  encoders of residual nets with an attention policy);
* ``network_format`` and ``metadata`` fill the fields of ``BaseNetwork`` the same way for every body.

The body readers (``attention_reader.py``, ``residual_reader.py``) and the shared heads
(``heads.py``) are built on these; ``loader.py`` picks the body.
"""

from __future__ import annotations

from typing import Any, NoReturn, TypedDict

import numpy as np

from lc0py.errors import UnsupportedNetError, WeightsFormatError
from lc0py.weights import proto
from lc0py.weights.decode import decode_layer, layer_element_count
from lc0py.weights.network import (
    Activation,
    DefaultActivation,
    Dense,
    EncoderLayer,
    InputEmbedding,
    InputFormat,
    LayerNorm,
    MovesLeftFormat,
    NetworkFormat,
    NetworkKind,
    OutputFormat,
    PolicyFormat,
    Smolgen,
    ValueFormat,
)

_SMOLGEN_EPS = 1e-3

#: The widest layer lc0py accepts (a bias that defines a width: embedding, FFN, SE, smolgen); lc0's
#: nets stay below 10 000, and a wider one is refused before it is decoded (issue 30 item 4).
MAX_WIDTH = 1 << 20


def _shape_text(shape: tuple[int, ...]) -> str:
    return "x".join(str(d) for d in shape)


class LayerReader:
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
# refusals, the encoder layer, the format and metadata every body shares


def unsupported(source: str, message: str) -> NoReturn:
    """Refuse a valid lc0 network that lc0py does not run: one line naming ``source``."""
    raise UnsupportedNetError(f"{source}: {message}")


def enum_name(enum_cls: Any, value: int) -> str:
    """The enum member's name of ``value``, or the number when the enum does not know it."""
    try:
        return str(enum_cls(value).name)
    except ValueError:
        return str(value)


def read_encoder_layer(r: LayerReader, layer: Any, i: int, e: int, heads: int, d_model: int, eps: float,
                       gs: int | None) -> EncoderLayer:
    """Encoder layer ``i`` (``encoder[i].``): ``e`` is its input width, ``d_model`` the attention width
    of layer 0, ``gs`` the smolgen gen size (``None``: the net has no smolgen)."""
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


def _build_smolgen(r: LayerReader, s: Any, p: str, e: int, heads: int, gs: int) -> Smolgen:
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


def network_format(nf: Any, source: str, input_embedding: InputEmbedding,
                   has_moves_left: bool = True) -> NetworkFormat:
    """The stored ``network_format`` as lc0py's enums (an output lc0py does not know is UNKNOWN);
    ``input_embedding`` as the body reads it; ``has_moves_left`` False (V1 without moves-left
    weights: ``heads.has_moves_left_weights``) stores moves_left as NONE."""
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


class Metadata(TypedDict):
    """``BaseNetwork``'s keyword fields as the loader fills them for either body."""

    min_version: tuple[int, int, int]
    policy_head_name: str
    value_head_name: str
    available_policy_heads: tuple[str, ...]
    available_value_heads: tuple[str, ...]
    license: str
    extra: dict[str, object]


HeadChoice = tuple[str, dict[str, Any], dict[str, Any]]


def metadata(net: Any, policy: HeadChoice, value: HeadChoice) -> Metadata:
    """Version gate, license and heads. ``policy`` and ``value`` are each (the selected name, the
    heads the net stores by name, the heads that built: ``build_heads``'s second result, kept in
    ``extra``)."""
    v = net.min_version
    (policy_head, policy_sources, all_policy), (value_head, value_sources, all_value) = policy, value
    return Metadata(
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
        unsupported(source, f"input format {value} is not supported")
    if fmt == InputFormat.UNKNOWN:  # lc0 refuses it too: no encoder knows what the planes mean
        unsupported(source, "input format 0 (INPUT_UNKNOWN) is not supported")
    return fmt
