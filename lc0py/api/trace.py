"""What happens inside the network for one position: :class:`Trace` (``Net.trace(board)``).

Recorded by the numpy reference forward pass (``lc0py.model.forward``'s ``trace=`` hook, whose
docstring lists the activation keys). Squares are in the network's frame: the board seen from
the side to move (flipped for black) and then ``transform`` applied (lc0's canonical symmetries,
``lc0py.chess.transforms``; 0 for most positions), square index ``8 * rank + file``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from lc0py.api.evaluation import Evaluation, summarise
from lc0py.chess import PositionHistory, encode_batch
from lc0py.model.forward import forward
from lc0py.model.layers import attention_probabilities, dense
from lc0py.weights.network import Network
from lc0py.weights.residual import ResidualNetwork


@dataclass(frozen=True)
class Trace:
    """Activations and attention maps of one forward pass (float32, batch axis removed).

    ``activations``: name -> array, in computation order (``"embedding"`` ``[64, E]``,
    ``"encoder{l}.output"`` ``[64, E]``, ``"encoder{l}.smolgen"`` ``[H, 64, 64]``, ...).
    ``attention``: one ``[H, 64, 64]`` array per encoder layer (none for convolutional nets),
    ``attention[l][h, q, k]`` = how much query square ``q`` attends to key square ``k`` in head
    ``h`` (each row sums to 1).
    ``transform``: the symmetry applied to the board before encoding. ``evaluation``: the
    outputs of this same pass. ``device_activations``: what the backend itself computed, where it
    can expose it cheaply (GPU backends: ``"embedding"`` and each ``"encoder{l}.attention"``, the
    attention output before its projection, from the kernels that run in production, flash
    included), empty otherwise; compare them with ``activations`` to see where a device drifts.
    """

    evaluation: Evaluation
    activations: dict[str, np.ndarray]
    attention: list[np.ndarray]
    transform: int
    device_activations: dict[str, np.ndarray] = field(default_factory=dict)


def trace_position(
    network: Network | ResidualNetwork, history: PositionHistory, temperature: float = 1.0
) -> Trace:
    """Run ``network`` (already float32) on ``history``'s position, recording everything."""
    encoded = history.encode(int(network.format.input))
    planes = encode_batch([encoded]).dense(np.float32)
    recorded: dict[str, np.ndarray] = {}
    out = forward(network, planes, np.float32, trace=recorded)
    attention = []
    # attention probabilities of each encoder layer (a residual net has none)
    encoders, heads = network.attention_layers()
    for index, layer in enumerate(encoders):
        x = recorded["embedding" if index == 0 else f"encoder{index - 1}.output"]
        q, k = dense(x, layer.q), dense(x, layer.k)
        bias = recorded.get(f"encoder{index}.smolgen")
        attention.append(attention_probabilities(q, k, bias, heads)[0])
    mlh = float(out.moves_left[0]) if network.has_moves_left else None
    evaluation = summarise(history.board, encoded.transform, out.policy[0], out.wdl[0], mlh, temperature)
    activations = {key: value[0] for key, value in recorded.items()}
    return Trace(evaluation, activations, attention, encoded.transform)
