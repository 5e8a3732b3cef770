"""Write an attention-body ``Network`` as a ``pblczero.Net`` (the attention half of ``writer.py``).

Activations are written resolved (never DEFAULT), ``headcount`` filled; format 7 nets get
``policy_heads``/``value_heads`` containers with all heads in ``network.extra``, the shared policy
embedding written once in ``policy_heads.ip_pol_w``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lc0py.weights.layer_writer import LayerWriter, all_heads, new_net, write_heads
from lc0py.weights.network import Dense, InputEmbedding, Network, NetworkKind, WeightsEncoding


def _same_dense(a: Dense, b: Dense) -> bool:
    if a is b:
        return True
    if a.w.shape != b.w.shape or not np.array_equal(a.w, b.w):
        return False
    if a.b is None or b.b is None:
        return a.b is None and b.b is None
    return bool(np.array_equal(a.b, b.b))


def attention_to_proto(network: Network, wr: LayerWriter, enc: WeightsEncoding) -> Any:
    """The ``pblczero.Net`` for ``network``; ``wr`` encodes the layers in ``enc``."""
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

