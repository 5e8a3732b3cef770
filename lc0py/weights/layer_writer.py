"""Write lc0py's types into a ``pblczero.Net``: what every network body shares.

``LayerWriter`` encodes layers (dense, LayerNorm, encoder layers, the attention policy and value
heads) in one ``Weights.Layer`` encoding; ``new_net`` starts the message with what every body
writes alike (magic, license, version gate, ``network_format``); ``all_heads`` and ``write_heads``
put a multi-head net's heads into ``policy_heads``/``value_heads``. The body writers
(``attention_writer.py``, ``residual_writer.py``) are built on these; ``writer.py`` picks the body.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from lc0py.weights import proto
from lc0py.weights.decode import encode_layer
from lc0py.weights.network import (
    BaseNetwork,
    Dense,
    EncoderLayer,
    LayerNorm,
    MovesLeftFormat,
    NetworkKind,
    PolicyHead,
    ValueHead,
    WeightsEncoding,
)

_POLICY_FIELDS = {"vanilla": "vanilla", "optimistic": "optimistic_st", "soft": "soft", "opponent": "opponent"}
_VALUE_FIELDS = {"winner": "winner", "q": "q", "st": "st"}


class LayerWriter:
    """Encodes lc0py's layers into ``pblczero`` messages, every one in ``encoding``."""

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


def new_net(network: BaseNetwork, enc: WeightsEncoding, kind: NetworkKind) -> Any:
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
    nf.moves_left = int(MovesLeftFormat.V1 if network.has_moves_left else MovesLeftFormat.NONE)
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


