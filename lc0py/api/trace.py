"""What happens inside the network for one position: :class:`Trace` (``Net.trace(board)``).

Recorded by the numpy reference forward pass (``lc0py.model.forward``'s ``trace=`` hook, whose
docstring lists the activation keys). Squares are in the network's frame: the board seen from
the side to move (flipped for black) and then ``transform`` applied (lc0's canonical symmetries,
``lc0py.chess.transforms``; 0 for most positions), square index ``8 * rank + file``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lc0py.api.evaluation import Evaluation, summarise
from lc0py.chess import PositionHistory, encode_batch
from lc0py.errors import Lc0pyError
from lc0py.model.forward import forward
from lc0py.model.layers import attention_probabilities, dense
from lc0py.weights.network import Network
from lc0py.weights.residual import ResidualNetwork


class NoAttentionError(Lc0pyError, IndexError):
    """``trace.attention[l]`` on a net that has no such attention layer (a residual body has none)."""


class AttentionMaps(list[np.ndarray]):
    """The attention maps of a trace, one per encoder layer; indexing past them (always, on a
    residual body) raises :class:`NoAttentionError`, which says why and where to look instead."""

    def __init__(self, maps: list[np.ndarray], body: str) -> None:
        super().__init__(maps)
        self.body = body

    def __getitem__(self, index: Any) -> Any:
        try:
            return super().__getitem__(index)
        except IndexError:
            if self.body == "residual":
                raise NoAttentionError(
                    "this net has a residual (convolutional) body: it has no attention maps; its "
                    "per-block activations are trace.blocks (trace.activations['block{i}.output'])"
                ) from None
            raise NoAttentionError(f"attention layer {index} does not exist: this net has "
                                   f"{len(self)} encoder layers") from None


@dataclass(frozen=True)
class Trace:
    """Activations and attention maps of one forward pass (float32, batch axis removed).

    ``activations``: name -> array, in computation order. Attention body: ``"embedding"``
    ``[64, E]``, ``"encoder{l}.output"`` ``[64, E]``, ``"encoder{l}.smolgen"`` ``[H, 64, 64]``, ...;
    residual body: ``"input"`` ``[C, 8, 8]``, ``"block{i}.conv1"``, ``"block{i}.conv2"``,
    ``"block{i}.output"`` ``[C, 8, 8]`` (``lc0py.model.forward`` lists every key).
    ``body``: ``"attention"`` or ``"residual"``. ``blocks``: the output of each block of the body,
    in order (encoder layers or residual blocks), the per-block activations of either body.
    ``attention``: one ``[H, 64, 64]`` array per encoder layer (none for a residual body, where
    indexing it raises :class:`NoAttentionError`), ``attention[l][h, q, k]`` = how much query
    square ``q`` attends to key square ``k`` in head ``h`` (each row sums to 1).
    ``transform``: the symmetry applied to the board before encoding. ``evaluation``: the
    outputs of this same pass (after any intervention). ``device_activations``: what the backend
    itself computed, where it can expose it cheaply (GPU backends: ``"embedding"`` and each
    ``"encoder{l}.attention"``, the attention output before its projection, from the kernels that
    run in production, flash included), empty otherwise; compare them with ``activations`` to
    see where a device drifts.
    """

    evaluation: Evaluation
    activations: dict[str, np.ndarray]
    attention: list[np.ndarray]
    transform: int
    device_activations: dict[str, np.ndarray] = field(default_factory=dict)
    body: str = "attention"

    @property
    def blocks(self) -> list[np.ndarray]:
        """Each body block's output, in order: ``encoder{l}.output`` or ``block{i}.output``."""
        prefix = "encoder" if self.body == "attention" else "block"
        found: list[np.ndarray] = []
        while f"{prefix}{len(found)}.output" in self.activations:
            found.append(self.activations[f"{prefix}{len(found)}.output"])
        return found


Intervention = Callable[[str, np.ndarray], "np.ndarray | None"]
"""``hook(key, activation)``: called with each intermediate of the reference pass (``key`` as in
``Trace.activations``, the array with its batch axis first); return an array of the same shape to
replace it for the rest of the pass, or ``None`` to leave it."""


def trace_positions(
    network: Network | ResidualNetwork, histories: list[PositionHistory], temperature: float = 1.0,
    intervene: Intervention | None = None,
) -> list[Trace]:
    """Run ``network`` (already float32) on the positions as one batch, recording everything;
    ``intervene`` may read and replace any intermediate (see :data:`Intervention`)."""
    fmt = int(network.format.input)
    encoded = [history.encode(fmt) for history in histories]
    planes = encode_batch(encoded).dense(np.float32)
    recorded: dict[str, np.ndarray] = {}

    def record(key: str, value: np.ndarray) -> np.ndarray | None:
        replaced = intervene(key, value) if intervene is not None else None
        recorded[key] = value if replaced is None else np.asarray(replaced, dtype=value.dtype)
        return replaced

    out = forward(network, planes, np.float32, trace=record)
    body = network.body
    maps = []
    # attention probabilities of each encoder layer (a residual net has none)
    encoders, heads = network.attention_layers()
    for index, layer in enumerate(encoders):
        x = recorded["embedding" if index == 0 else f"encoder{index - 1}.output"]
        q, k = dense(x, layer.q), dense(x, layer.k)
        bias = recorded.get(f"encoder{index}.smolgen")
        maps.append(attention_probabilities(q, k, bias, heads))
    traces = []
    for b, (history, enc) in enumerate(zip(histories, encoded, strict=True)):
        mlh = float(out.moves_left[b]) if network.has_moves_left else None
        evaluation = summarise(history.board, enc.transform, out.policy[b], out.wdl[b], mlh, temperature)
        activations = {key: value[b] for key, value in recorded.items()}
        traces.append(Trace(evaluation, activations, AttentionMaps([m[b] for m in maps], body),
                            enc.transform, body=body))
    return traces


def trace_position(
    network: Network | ResidualNetwork, history: PositionHistory, temperature: float = 1.0,
    intervene: Intervention | None = None,
) -> Trace:
    """Run ``network`` (already float32) on ``history``'s position, recording everything."""
    return trace_positions(network, [history], temperature, intervene)[0]
