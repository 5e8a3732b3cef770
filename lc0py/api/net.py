"""``lc0py.load(...)`` and :class:`Net`: evaluate python-chess boards in one line.

    >>> net = lc0py.load("weights/tiny-seed1.pb.gz")          # doctest: +SKIP
    >>> net.evaluate(chess.Board()).wdl                        # doctest: +SKIP

A board is evaluated as lc0 evaluates the current position of a game: the history planes come
from the board's move stack (``board.root()`` and the moves played since, as lc0 sees a game
given by ``position fen ... moves ...``), so a board built with ``push`` sees its history while
``chess.Board(fen)`` has none (lc0 fills it as lc0 does for a bare FEN). Backends, weights and
options are those of the CLI (``--backend``, ``--weights``, ``--backend-opts``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

import chess
import numpy as np

from lc0py.api.evaluation import Evaluation, check_temperature, summarise
from lc0py.api.trace import Trace, trace_position
from lc0py.backends.options import BackendOptions
from lc0py.backends.registry import check_name, create_backend, resolve_network
from lc0py.chess import PositionHistory, encode_batch
from lc0py.errors import Lc0pyError
from lc0py.model.forward import cast_network
from lc0py.weights.network import Network
from lc0py.weights.residual import ResidualNetwork

if TYPE_CHECKING:
    from lc0py.backends.base import Backend

Position = chess.Board | PositionHistory
"""What the evaluation methods take: a python-chess board (its move stack is the history) or a
:class:`lc0py.chess.PositionHistory`."""

Weights = str | Path | Network | ResidualNetwork | None
Options = str | Mapping[str, str] | None


def _history(position: Position) -> PositionHistory:
    if isinstance(position, PositionHistory):
        return position
    if isinstance(position, chess.Board):
        return PositionHistory.from_board(position)
    raise TypeError(f"expected a chess.Board or PositionHistory, got {type(position).__name__}")


class Net:
    """A network on a backend, ready to evaluate positions. Create it with :func:`load`.

    ``backend``: the :class:`lc0py.backends.base.Backend` doing the work (``backend.name`` says
    which one "auto" picked); ``network``: the loaded weights (``None`` for the ``random``
    backend without weights). Close it (or use ``with``) to free device memory.
    """

    def __init__(self, backend: Backend, network: Network | ResidualNetwork | None = None) -> None:
        self.backend = backend
        self.network = network
        self._reference: Network | ResidualNetwork | None = None

    def __repr__(self) -> str:
        return f"Net(backend={self.backend.name!r})"

    def evaluate(self, board: Position, *, temperature: float = 1.0) -> Evaluation:
        """The network's opinion of ``board``'s current position (see :class:`Evaluation`)."""
        return self.evaluate_many([board], temperature=temperature)[0]

    def evaluate_many(
        self, boards: Iterable[Position], *, temperature: float = 1.0, batch_size: int | None = None
    ) -> list[Evaluation]:
        """Evaluate ``boards`` in batches of at most ``batch_size`` (default: the backend's
        recommended size), in order (see :meth:`iter_evaluate` to stream them)."""
        return list(self.iter_evaluate(boards, temperature=temperature, batch_size=batch_size))

    def iter_evaluate(
        self, boards: Iterable[Position], *, temperature: float = 1.0, batch_size: int | None = None
    ) -> Iterator[Evaluation]:
        """Yield one :class:`Evaluation` per board, in order, one batch of at most ``batch_size``
        positions in flight at a time (bounded memory for any number of boards)."""
        t = check_temperature(temperature)
        size = int(batch_size or self.backend.info.recommended_batch or 256)
        if size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        fmt = self.backend.info.input_format
        chunk: list[PositionHistory] = []
        for board in boards:
            chunk.append(_history(board))
            if len(chunk) == size:
                yield from self._evaluate_chunk(chunk, fmt, t)
                chunk = []
        if chunk:
            yield from self._evaluate_chunk(chunk, fmt, t)

    def _evaluate_chunk(self, chunk: list[PositionHistory], fmt: int, temperature: float) -> list[Evaluation]:
        encoded = [h.encode(fmt) for h in chunk]
        out = self.backend.evaluate(encode_batch(encoded))
        for what, values in (("policy", out.policy), ("WDL", out.wdl)):
            finite = np.isfinite(np.asarray(values, dtype=np.float64)).reshape(len(chunk), -1).all(axis=1)
            if not finite.all():  # NaN never passes as a result
                bad = chunk[int(np.argmin(finite))].board.fen()
                raise Lc0pyError(f"{bad}: backend {getattr(self.backend, 'name', '?')} returned a "
                                 f"non-finite {what} (NaN or infinity) for this position")
        mlh = self.backend.info.has_moves_left
        return [
            summarise(history.board, enc.transform, out.policy[i], out.wdl[i],
                      float(out.moves_left[i]) if mlh else None, temperature)
            for i, (history, enc) in enumerate(zip(chunk, encoded, strict=True))
        ]

    def trace(self, board: Position, *, temperature: float = 1.0) -> Trace:
        """Per-layer activations and per-head attention probabilities for ``board``.

        Computed by the numpy float32 reference forward pass on this net's weights, whatever the
        backend (the GPU kernels never materialise the attention matrix: that is their point); a
        GPU backend adds its own per-layer attention outputs as ``device_activations``.
        """
        if self.network is None:
            raise ValueError("trace needs a network: this Net has none (random backend)")
        if self._reference is None:
            self._reference = cast_network(self.network, np.float32)
        history = _history(board)
        trace = trace_position(self._reference, history, check_temperature(temperature))
        device = self._device_activations(history)
        return dataclasses.replace(trace, device_activations=device) if device else trace

    def _device_activations(self, history: PositionHistory) -> dict[str, np.ndarray]:
        """The backend's own intermediates for one position, where it exposes them (the GPU
        backends' ``evaluate_traced``, as ``lc0py verify`` uses it); ``{}`` otherwise."""
        traced = getattr(getattr(self.backend, "gpu", None), "evaluate_traced", None)
        if traced is None:
            return {}
        batch = encode_batch([history.encode(self.backend.info.input_format)])
        _, taps = traced(batch, flash=True)
        return {key: np.asarray(value)[0] for key, value in taps.items()}

    def close(self) -> None:
        """Release the backend (device memory, handles); idempotent."""
        self.backend.close()

    def __enter__(self) -> Net:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def load(weights: Weights = None, backend: str = "auto", options: Options = None) -> Net:
    """Load a network onto a backend: ``lc0py.load("net.pb.gz").evaluate(chess.Board())``.

    ``weights``: an lc0 ``.pb.gz`` path, a loaded :class:`lc0py.weights.Network`, or ``None`` for
    the built-in default net (random weights, said on stderr). ``backend``: lc0's names
    (``"auto"`` picks the best that runs here). ``options``: ``--backend-opts`` as text
    (``"precision=fp64"``) or a mapping; ``policy_head``/``value_head`` pick a multi-head net's heads.
    A bad name, option, or file raises an :class:`lc0py.errors.Lc0pyError` subclass.
    """
    name = check_name(backend)
    text = dict(options) if isinstance(options, Mapping) else options
    opts = BackendOptions.parse(text, backend=name)  # syntax checked before anything loads
    network = resolve_network(
        weights,
        name,
        policy_head=opts.values.get("policy_head", "vanilla"),
        value_head=opts.values.get("value_head", "winner"),
    )
    return Net(create_backend(name, network, text), network)
