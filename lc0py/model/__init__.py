"""numpy reference forward pass of lc0 networks (float32 / float64): the truth.

Attention bodies (``attention_body.py``) and residual SE-ResNet bodies (``residual.py``), on the
shared heads (``heads.py``); ``forward`` runs the network's body (``network.body``).

Public API:
    forward(network, planes [B,112,8,8], dtype=np.float32, trace=None) -> ForwardOutput
    cast_network(network, dtype) -> Network
    activation(name, x), layer_norm(x, gamma, beta, eps), attention_reference(q, k, v, bias, heads)
    pos_encoding_table(), attention_policy_gather()
"""

from __future__ import annotations

from lc0py.model.activations import activation
from lc0py.model.attention_body import planes_to_tokens
from lc0py.model.forward import cast_network, forward
from lc0py.model.heads import ForwardOutput
from lc0py.model.layers import attention_reference, dense, layer_norm, softmax
from lc0py.model.tables import attention_policy_gather, pos_encoding_table

__all__ = [
    "ForwardOutput",
    "activation",
    "attention_policy_gather",
    "attention_reference",
    "cast_network",
    "dense",
    "forward",
    "layer_norm",
    "planes_to_tokens",
    "pos_encoding_table",
    "softmax",
]
