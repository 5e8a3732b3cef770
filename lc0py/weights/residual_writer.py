"""Write a ``ResidualNetwork`` as an lc0 weights file (the residual half of ``writer.py``).

Convolutions are stored folded: ``weights`` + ``biases`` and no batch-norm fields, which every lc0
reads as "no batch norm" (``network_legacy.cc``). Multi-head residual nets keep their heads in
``policy_heads``/``value_heads`` like attention nets. The format is written explicitly:
``NETWORK_SE_WITH_HEADFORMAT`` when any block has an SE unit, else
``NETWORK_CLASSICAL_WITH_HEADFORMAT``; activations of the attention body are left unset.
"""

from __future__ import annotations

from typing import Any

from lc0py.weights.layer_writer import LayerWriter, all_heads, new_net, write_heads
from lc0py.weights.network import NetworkKind, WeightsEncoding
from lc0py.weights.residual import (
    ClassicalPolicyHead,
    Conv,
    ConvPolicyHead,
    ConvValueHead,
    ResidualAttentionPolicyHead,
    ResidualNetwork,
    ResidualPolicy,
)


def residual_to_proto(network: ResidualNetwork, wr: LayerWriter, enc: WeightsEncoding) -> Any:
    """The ``pblczero.Net`` for ``network``; ``wr`` encodes the layers in ``enc``."""
    multihead = len(network.available_policy_heads) > 1 or len(network.available_value_heads) > 1
    kind = NetworkKind.SE_WITH_HEADFORMAT if network.se_blocks > 0 else NetworkKind.CLASSICAL_WITH_HEADFORMAT
    net = new_net(network, enc, kind)

    w = net.weights
    _conv(wr, w.input, network.input)
    for block in network.blocks:
        res = w.residual.add()
        _conv(wr, res.conv1, block.conv1)
        _conv(wr, res.conv2, block.conv2)
        if block.se is not None:
            wr.dense(res.se, "w1", "b1", block.se.fc1)
            wr.dense(res.se, "w2", "b2", block.se.fc2)

    if multihead:
        write_heads(w, all_heads(network, "policy_heads", network.policy),
                    all_heads(network, "value_heads", network.value),
                    lambda msg, head: _policy(wr, msg, head), lambda msg, head: _value(wr, msg, head))
    else:
        _policy(wr, w, network.policy)
        _value(wr, w, network.value)

    if network.moves_left is not None:
        m = network.moves_left
        _conv(wr, w.moves_left, m.conv)
        wr.dense(w, "ip1_mov_w", "ip1_mov_b", m.fc1)
        wr.dense(w, "ip2_mov_w", "ip2_mov_b", m.fc2)
    return net


def _conv(wr: LayerWriter, msg: Any, conv: Conv) -> None:
    wr.put(msg.weights, conv.w)
    wr.put(msg.biases, conv.b)


def _policy(wr: LayerWriter, msg: Any, head: ResidualPolicy) -> None:
    if isinstance(head, ConvPolicyHead):
        _conv(wr, msg.policy1, head.conv1)
        _conv(wr, msg.policy, head.conv2)
    elif isinstance(head, ClassicalPolicyHead):
        _conv(wr, msg.policy, head.conv)
        wr.dense(msg, "ip_pol_w", "ip_pol_b", head.fc)
    else:
        assert isinstance(head, ResidualAttentionPolicyHead)
        wr.policy(msg, head.head)
        for layer in head.encoders:
            wr.encoder(msg.pol_encoder.add(), layer)
        if head.encoders:
            msg.pol_headcount = head.encoder_heads


def _value(wr: LayerWriter, msg: Any, head: ConvValueHead) -> None:
    _conv(wr, msg.value, head.conv)
    wr.dense(msg, "ip1_val_w", "ip1_val_b", head.fc1)
    wr.dense(msg, "ip2_val_w", "ip2_val_b", head.fc2)

