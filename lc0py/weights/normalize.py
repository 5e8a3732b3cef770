"""lc0's ``FixOlderWeightsFile``: rewrite an old file's ``NetworkFormat`` before anything reads it.

The rules (docs/weights-format.md §3) are applied in lc0's order to the parsed ``pblczero.Net`` in
place, so every later decision (body kind, embedding, LayerNorm epsilon, activations) sees the
same format lc0's backends see.
"""

from __future__ import annotations

from typing import Any

from lc0py.weights.network import (
    Activation,
    InputEmbedding,
    InputFormat,
    NetworkKind,
    OutputFormat,
    PolicyFormat,
    ValueFormat,
)


def fix_older_weights_file(net: Any) -> None:
    """Normalise ``net.format.network_format`` in place (rules 1-6 of §3)."""
    had_format = net.format.HasField("network_format")
    nf = net.format.network_format  # creates the sub-message if absent, as lc0 does
    kind = nf.network
    if not had_format:  # rule 1: oldest files carry no format at all
        nf.input = InputFormat.CLASSICAL_112_PLANE
        nf.output = OutputFormat.CLASSICAL
        nf.network = NetworkKind.CLASSICAL_WITH_HEADFORMAT
        nf.value = ValueFormat.CLASSICAL
        nf.policy = PolicyFormat.CLASSICAL
    elif kind == NetworkKind.CLASSICAL:  # rule 2
        nf.network = NetworkKind.CLASSICAL_WITH_HEADFORMAT
        nf.value = ValueFormat.CLASSICAL
        nf.policy = PolicyFormat.CLASSICAL
    elif kind == NetworkKind.SE:  # rule 3
        nf.network = NetworkKind.SE_WITH_HEADFORMAT
        nf.value = ValueFormat.CLASSICAL
        nf.policy = PolicyFormat.CLASSICAL
    elif kind == NetworkKind.SE_WITH_HEADFORMAT and len(net.weights.encoder) > 0:
        # rule 4: attention body saved with an old schema; early smolgen nets' fixed activations
        nf.network = NetworkKind.ATTENTIONBODY_WITH_HEADFORMAT
        if net.weights.HasField("smolgen_w"):
            nf.ffn_activation = Activation.RELU_2
            nf.smolgen_activation = Activation.SWISH
    elif kind == NetworkKind.AB_LEGACY_WITH_MULTIHEADFORMAT:  # rule 5
        nf.network = NetworkKind.ATTENTIONBODY_WITH_MULTIHEADFORMAT

    if nf.network == NetworkKind.ATTENTIONBODY_WITH_HEADFORMAT:  # rule 6
        w = net.weights
        if w.HasField("policy_heads") and w.HasField("value_heads"):
            nf.network = NetworkKind.ATTENTIONBODY_WITH_MULTIHEADFORMAT
            nf.input_embedding = InputEmbedding.PE_DENSE
        if not nf.HasField("input_embedding"):
            nf.input_embedding = InputEmbedding.PE_MAP
