"""Write a ``Network`` as an lc0 weights file that lc0 itself loads (docs/weights-format.md §10).

``network_to_proto`` builds the ``pblczero.Net``: magic 0x1c0, ``min_version`` 0.30.0 for LINEAR16
(0.33.0 when layers use FLOAT16/BFLOAT16/FLOAT32, which older lc0 would mis-decode),
``weights_encoding = LINEAR16`` while min_version < 0.33, every ``NetworkFormat`` field explicit
(activations resolved, never DEFAULT), ``headcount`` and ``dims`` filled. Format 7 nets get
``policy_heads``/``value_heads`` containers with all heads in ``network.extra``.

``save_network`` serialises it deterministically (gzip with mtime 0 and no file name) and writes
atomically through ``lc0py.storage.atomic.write_atomically`` (mkstemp in the target folder, then
``os.replace``); on failure nothing is left behind.
"""

from __future__ import annotations

import gzip
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from lc0py.errors import UsageError
from lc0py.storage.atomic import write_atomically
from lc0py.weights import proto
from lc0py.weights.decode import ENCODING_NAMES, encode_layer
from lc0py.weights.network import (
    BaseNetwork,
    Dense,
    EncoderLayer,
    InputEmbedding,
    LayerNorm,
    MovesLeftFormat,
    Network,
    NetworkKind,
    PolicyHead,
    ValueHead,
    WeightsEncoding,
)
from lc0py.weights.residual import ResidualNetwork

_POLICY_FIELDS = {"vanilla": "vanilla", "optimistic": "optimistic_st", "soft": "soft", "opponent": "opponent"}
_VALUE_FIELDS = {"winner": "winner", "q": "q", "st": "st"}


def _encoding(encoding: str | WeightsEncoding) -> WeightsEncoding:
    if isinstance(encoding, WeightsEncoding):
        if encoding == WeightsEncoding.UNKNOWN:
            raise UsageError("encoding UNKNOWN cannot be written")
        return encoding
    key = str(encoding).lower()
    if key not in ENCODING_NAMES:
        raise UsageError(f"encoding '{encoding}': unknown (available: {', '.join(ENCODING_NAMES)})")
    return ENCODING_NAMES[key]


class _Writer:
    def __init__(self, encoding: WeightsEncoding) -> None:
        self.encoding = encoding

    def put(self, layer: Any, values: np.ndarray | None) -> None:
        if values is not None:
            encode_layer(layer, values, self.encoding)

    def dense(self, msg: Any, w: str, b: str, dense: Dense) -> None:
        self.put(getattr(msg, w), dense.w)
        self.put(getattr(msg, b), dense.b)

    def layer_norm(self, msg: Any, gammas: str, betas: str, ln: LayerNorm) -> None:
        self.put(getattr(msg, gammas), ln.gamma)
        self.put(getattr(msg, betas), ln.beta)

    def encoder(self, msg: Any, layer: EncoderLayer) -> None:
        mha = msg.mha
        self.dense(mha, "q_w", "q_b", layer.q)
        self.dense(mha, "k_w", "k_b", layer.k)
        self.dense(mha, "v_w", "v_b", layer.v)
        self.dense(mha, "dense_w", "dense_b", layer.out)
        if layer.smolgen is not None:
            s, sg = mha.smolgen, layer.smolgen
            self.put(s.compress, sg.compress)
            self.dense(s, "dense1_w", "dense1_b", sg.dense1)
            self.layer_norm(s, "ln1_gammas", "ln1_betas", sg.ln1)
            self.dense(s, "dense2_w", "dense2_b", sg.dense2)
            self.layer_norm(s, "ln2_gammas", "ln2_betas", sg.ln2)
        self.layer_norm(msg, "ln1_gammas", "ln1_betas", layer.ln1)
        self.dense(msg.ffn, "dense1_w", "dense1_b", layer.ffn1)
        self.dense(msg.ffn, "dense2_w", "dense2_b", layer.ffn2)
        self.layer_norm(msg, "ln2_gammas", "ln2_betas", layer.ln2)

    def policy(self, msg: Any, head: PolicyHead, with_embedding: bool = True) -> None:
        if with_embedding:
            self.dense(msg, "ip_pol_w", "ip_pol_b", head.embedding)
        self.dense(msg, "ip2_pol_w", "ip2_pol_b", head.wq)
        self.dense(msg, "ip3_pol_w", "ip3_pol_b", head.wk)
        self.put(msg.ip4_pol_w, head.promotion)

    def value(self, msg: Any, head: ValueHead) -> None:
        self.dense(msg, "ip_val_w", "ip_val_b", head.embedding)
        self.dense(msg, "ip1_val_w", "ip1_val_b", head.fc1)
        self.dense(msg, "ip2_val_w", "ip2_val_b", head.fc2)


def _same_dense(a: Dense, b: Dense) -> bool:
    if a is b:
        return True
    if a.w.shape != b.w.shape or not np.array_equal(a.w, b.w):
        return False
    if a.b is None or b.b is None:
        return a.b is None and b.b is None
    return bool(np.array_equal(a.b, b.b))


def network_to_proto(network: Network | ResidualNetwork, encoding: str | WeightsEncoding = "linear16") -> Any:
    """The ``pblczero.Net`` message for ``network`` with every layer in ``encoding``."""
    enc = _encoding(encoding)
    wr = _Writer(enc)
    if isinstance(network, ResidualNetwork):
        from lc0py.weights.residual_writer import residual_to_proto

        return residual_to_proto(network, wr, enc)
    f = network.format
    multihead = f.network == NetworkKind.ATTENTIONBODY_WITH_MULTIHEADFORMAT
    net = new_net(network, enc, NetworkKind.ATTENTIONBODY_WITH_MULTIHEADFORMAT if multihead
                  else NetworkKind.ATTENTIONBODY_WITH_HEADFORMAT)
    nf = net.format.network_format
    nf.smolgen_activation = int(network.smolgen_act)
    nf.ffn_activation = int(network.ffn_act)
    nf.input_embedding = int(f.input_embedding)

    w = net.weights
    emb = network.embedding
    if emb.kind == InputEmbedding.PE_DENSE and emb.preproc is not None:
        wr.dense(w, "ip_emb_preproc_w", "ip_emb_preproc_b", emb.preproc)
    wr.dense(w, "ip_emb_w", "ip_emb_b", emb.dense)
    if emb.ln is not None:
        wr.layer_norm(w, "ip_emb_ln_gammas", "ip_emb_ln_betas", emb.ln)
    if emb.mult_gate is not None and emb.add_gate is not None:
        wr.put(w.ip_mult_gate, emb.mult_gate)
        wr.put(w.ip_add_gate, emb.add_gate)
    if emb.ffn1 is not None and emb.ffn2 is not None:
        wr.dense(w.ip_emb_ffn, "dense1_w", "dense1_b", emb.ffn1)
        wr.dense(w.ip_emb_ffn, "dense2_w", "dense2_b", emb.ffn2)
    if emb.ffn_ln is not None:
        wr.layer_norm(w, "ip_emb_ffn_ln_gammas", "ip_emb_ffn_ln_betas", emb.ffn_ln)
    for layer in network.encoders:
        wr.encoder(w.encoder.add(), layer)
    w.headcount = network.heads
    if network.smolgen_w is not None and network.has_smolgen:
        wr.put(w.smolgen_w, network.smolgen_w)

    if multihead:
        policies = all_heads(network, "policy_heads", network.policy)
        shared = policies.get("vanilla", network.policy).embedding
        wr.dense(w.policy_heads, "ip_pol_w", "ip_pol_b", shared)
        write_heads(w, policies, all_heads(network, "value_heads", network.value),
                    lambda msg, head: wr.policy(msg, head,
                                                with_embedding=not _same_dense(head.embedding, shared)),
                    wr.value)
    else:
        wr.policy(w, network.policy)
        wr.value(w, network.value)

    if network.moves_left is not None:
        m = network.moves_left
        wr.dense(w, "ip_mov_w", "ip_mov_b", m.embedding)
        wr.dense(w, "ip1_mov_w", "ip1_mov_b", m.fc1)
        wr.dense(w, "ip2_mov_w", "ip2_mov_b", m.fc2)
    return net


def new_net(network: Network | ResidualNetwork, enc: WeightsEncoding, kind: NetworkKind) -> Any:
    """A ``pblczero.Net`` with what every body writes alike: magic, license, the version gate of
    ``enc`` and the ``network_format`` fields both bodies have (``kind`` as ``network``)."""
    net = proto.Net()
    net.magic = proto.WEIGHT_MAGIC
    if network.license:
        net.license = network.license
    min_version = (0, 30, 0) if enc == WeightsEncoding.LINEAR16 else (0, 33, 0)
    net.min_version.major, net.min_version.minor, net.min_version.patch = min_version
    if min_version < (0, 33, 0):
        net.format.weights_encoding = proto.Format.LINEAR16
    f = network.format
    nf = net.format.network_format
    nf.input = int(f.input)
    nf.output = int(f.output)
    nf.network = int(kind)
    nf.policy = int(f.policy)
    nf.value = int(f.value)
    nf.moves_left = int(MovesLeftFormat.V1 if network.moves_left is not None else MovesLeftFormat.NONE)
    nf.default_activation = int(f.default_activation)
    return net


def all_heads(network: BaseNetwork, key: str, head: Any) -> dict[str, Any]:
    """All heads kept in ``network.extra[key]``; without them, the selected ``head`` as the default."""
    heads = network.extra.get(key)
    if isinstance(heads, dict) and heads:
        return dict(heads)
    return {"vanilla" if key == "policy_heads" else "winner": head}


def write_heads(w: Any, policies: dict[str, Any], values: dict[str, Any],
                policy: Callable[[Any, Any], None], value: Callable[[Any, Any], None]) -> None:
    """Write the heads lc0's multi-head format has a field for into ``w.policy_heads`` /
    ``w.value_heads``: ``policy(message, head)`` and ``value(message, head)`` write one head."""
    for name, head in policies.items():
        if name in _POLICY_FIELDS:
            policy(getattr(w.policy_heads, _POLICY_FIELDS[name]), head)
    for name, vhead in values.items():
        if name in _VALUE_FIELDS:
            value(getattr(w.value_heads, _VALUE_FIELDS[name]), vhead)


#: Payloads above this size are gzip-"stored" (level 0) unless a level is given: random weights
#: compress by only ~3% while deflating a 190 MB T82 costs ~5 s of CPU (and gunzip ~1.5 s).
STORE_ABOVE_BYTES = 32 * 1024 * 1024


def serialize_network(network: Network | ResidualNetwork, encoding: str | WeightsEncoding = "linear16",
                      gzip_output: bool = True, compresslevel: int | None = None) -> bytes:
    """The file bytes: serialised ``Net``, gzip-compressed with mtime 0 and no name (deterministic).

    ``compresslevel=None`` picks 6, or 0 (stored, still a valid gzip stream) for payloads above
    ``STORE_ABOVE_BYTES``; the choice depends only on the data, so output stays deterministic.
    """
    data = network_to_proto(network, encoding).SerializeToString(deterministic=True)
    if gzip_output:
        level = compresslevel if compresslevel is not None else (0 if len(data) > STORE_ABOVE_BYTES else 6)
        data = gzip.compress(data, compresslevel=level, mtime=0)
    return data


def save_network(
    network: Network | ResidualNetwork,
    path: str | os.PathLike[str],
    encoding: str | WeightsEncoding = "linear16",
    gzip: bool = True,
    compresslevel: int | None = None,
    force: bool = False,
) -> int:
    """Write ``network`` to ``path`` atomically; return the number of bytes written.

    ``gzip=False`` writes the plain protobuf (lc0 loads both); ``compresslevel`` as in
    ``serialize_network``. Written by ``lc0py.storage.atomic.write_atomically`` (refuses a
    directory, device or - unless ``force`` - symlink; keeps an existing file's mode). Raises
    ``UsageError`` (unknown encoding, unwritable path); nothing is created on failure.
    """
    name = os.fspath(path)
    data = serialize_network(network, encoding, gzip, compresslevel)
    write_atomically(name, data, force=force)
    return len(data)
