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

from lc0py.api.evaluation import Evaluation, check_temperature
from lc0py.api.trace import Intervention, Trace, trace_positions
from lc0py.backends.options import BackendOptions
from lc0py.backends.registry import check_name, create_backend, resolve_network
from lc0py.chess import PositionHistory, encode_batch
from lc0py.errors import ArgumentError, Lc0pyError, PositionError
from lc0py.model.forward import cast_network
from lc0py.weights.network import Network
from lc0py.weights.residual import ResidualNetwork

if TYPE_CHECKING:
    from lc0py.api.records import Item
    from lc0py.backends.base import Backend

Position = chess.Board | PositionHistory | str
"""What the evaluation methods take: a python-chess board (its move stack is the history), a
:class:`lc0py.chess.PositionHistory`, or a FEN string (``"startpos"`` too; no history, as lc0
sees ``position fen ...``)."""

Weights = str | Path | Network | ResidualNetwork | None
Options = str | Mapping[str, str] | None


class PositionTypeError(PositionError, TypeError):
    """A position of a type the API does not take (an ``Lc0pyError``, and a ``TypeError``)."""


def _history(position: Position) -> PositionHistory:
    if isinstance(position, PositionHistory):
        return position
    if isinstance(position, chess.Board):
        return PositionHistory.from_board(position, recent_only=True)
    if isinstance(position, str):
        text = _fen_text(position)
        try:
            return PositionHistory.from_fen(None if text in ("", "startpos") else text)
        except PositionError:
            raise
        except ValueError as exc:
            raise PositionError(f"'{position}': not a FEN ({exc})") from None
    raise PositionTypeError(f"a position is a chess.Board, a FEN string or a PositionHistory, "
                            f"not {type(position).__name__}")


def _fen_text(position: str) -> str:
    """A FEN string without ``position``/``fen`` prefixes (``""`` and ``startpos``: the start)."""
    text = position.strip()
    if text.startswith("position "):
        text = text[len("position "):].strip()
    if text.startswith("fen "):
        text = text[len("fen "):].strip()
    return text


def _item(position: Position) -> Item:
    """A position of a batch: a FEN string, or a standard-chess board as the FEN and UCI moves of
    its game from :func:`recent_start` (all its network input depends on), as a compiled record
    where the compiled reader reads it as python-chess does; else (and Chess960 boards,
    histories) python-chess's history."""
    from lc0py.api.records import Item, text_record

    record = None
    if isinstance(position, str):
        text = _fen_text(position)
        record = b"startpos" if text in ("", "startpos") else text_record(text)
    elif isinstance(position, chess.Board) and not position.chess960:
        record = _board_record(position)
    if record is not None:
        return Item(record=record, fallback=lambda: _history(position))
    return Item(history=_history(position))


def _board_record(board: chess.Board) -> bytes | None:
    """``board``'s game from :func:`recent_start` as ``position fen ... moves ...`` would give it
    (the window's first position with its FEN ep square, as ``from_board`` reads a root), or
    ``None`` when its root is one ``from_board`` refuses (python-chess then says why)."""
    from lc0py.api.records import text_record
    from lc0py.chess.history import position_before, recent_start, root_problem

    start = recent_start(board)
    if start == 0:  # the compiled reader checks the root as from_board does (else python-chess)
        first = board.root()
    elif root_problem(board.root()):
        return None
    else:
        first = position_before(board, start)
    return text_record(first.fen(en_passant="fen"), [m.uci() for m in board.move_stack[start:]])


def _api_terms(message: str) -> str:
    """An error message in the terms of ``load(weights, backend, options)``, not the CLI's flags."""
    for flag, word in (("--backend-opts", "options"), ("--backend auto", "backend='auto'"),
                       ("--backend", "backend"), ("--weights", "weights"), ("-o precision", "options")):
        message = message.replace(flag, word)
    return message


class Net:
    """A network on a backend, ready to evaluate positions. Create it with :func:`load`.

    ``backend``: the :class:`lc0py.backends.base.Backend` doing the work (``backend.name`` says
    which one "auto" picked); ``network``: the loaded weights (``None`` for the ``random``
    backend without weights). Close it (or use ``with``) to free device memory.
    """

    def __init__(self, backend: Backend, network: Network | ResidualNetwork | None = None,
                 path: str | None = None) -> None:
        self.backend = backend
        self.network = network
        self.path = path
        """The weights file the net was loaded from (``None``: a network object, or none)."""
        self._reference: Network | ResidualNetwork | None = None

    @property
    def body(self) -> str:
        """``"attention 15x768, 24 heads"``, ``"residual 20x256"`` or ``"none"`` (the body's
        kind and size: blocks x width)."""
        net = self.network
        if net is None:
            return "none"
        return net.summary()

    def __repr__(self) -> str:
        return f"Net(path={self.path!r}, body={self.body!r}, backend={self.backend.name!r})"

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
        chunk: list[Position] = []
        for board in boards:
            chunk.append(board)
            if len(chunk) == size:
                yield from self._evaluate_chunk(chunk, fmt, t)
                chunk = []
        if chunk:
            yield from self._evaluate_chunk(chunk, fmt, t)

    def _evaluate_chunk(self, chunk: list[Position], fmt: int, temperature: float) -> list[Evaluation]:
        # FEN strings take the compiled path (lc0py.api.records: python-chess's numbers, without
        # its objects); boards and histories, and text the compiled reader leaves to it, python-chess
        from lc0py.api.records import BatchResult

        items = [_item(position) for position in chunk]
        result = BatchResult(items, self.backend, temperature, fmt)
        return [result.evaluation(i) for i in range(len(items))]

    def trace(self, board: Position, *, temperature: float = 1.0,
              intervene: Intervention | None = None) -> Trace:
        """Per-block activations (``trace.blocks``, ``trace.activations``) and, on an attention
        body, per-head attention probabilities (``trace.attention``) for ``board``.

        Computed by the numpy float32 reference forward pass on this net's weights, whatever the
        backend (the GPU kernels never materialise the attention matrix: that is their point); a
        GPU backend adds its own per-layer attention outputs as ``device_activations``.

        ``intervene(key, activation)`` reads every intermediate as it is computed (``key`` as in
        ``trace.activations``, the array with its batch axis first) and may replace it by
        returning an array of the same shape (``None`` leaves it): the rest of the pass, the
        recorded activations and ``trace.evaluation`` then follow the patched value, e.g.
        ``net.trace(board, intervene=lambda k, a: a * 0 if k == "encoder3.mha" else None)``.
        """
        return self.trace_many([board], temperature=temperature, intervene=intervene)[0]

    def trace_many(self, boards: Iterable[Position], *, temperature: float = 1.0,
                   intervene: Intervention | None = None) -> list[Trace]:
        """:meth:`trace` for several positions in one batched pass (``intervene`` sees the whole
        batch: arrays ``[B, ...]`` in the order of ``boards``)."""
        if self.network is None:
            raise Lc0pyError("trace needs a network: this Net has none (the random backend)")
        if self._reference is None:
            self._reference = cast_network(self.network, np.float32)
        histories = [_history(board) for board in boards]
        if not histories:
            return []
        traces = trace_positions(self._reference, histories, check_temperature(temperature), intervene)
        if len(histories) == 1:
            device = self._device_activations(histories[0])
            if device:
                return [dataclasses.replace(traces[0], device_activations=device)]
        return traces

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
    (``"auto"`` picks the best that runs here). ``options``: backend options as text
    (``"precision=fp64,threads=2"``) or a mapping; ``policy_head``/``value_head`` pick a
    multi-head net's heads. A bad name, option, or file raises an
    :class:`lc0py.errors.Lc0pyError` subclass whose message names ``backend``/``options``.
    """
    try:
        return open_net(weights, backend, options)
    except Lc0pyError as exc:
        # the same error, said in this function's terms (backend=, options=), not the CLI's flags
        exc.args = (_api_terms(str(exc)), *exc.args[1:])
        raise


def open_net(weights: Weights = None, backend: str = "auto", options: Options = None) -> Net:
    """:func:`load` with its errors in the command line's terms (``--backend``, ``--weights``):
    what ``lc0py eval`` calls."""
    name = check_name(backend)
    text = dict(options) if isinstance(options, Mapping) else options
    opts = BackendOptions.parse(text, backend=name)  # syntax checked before anything loads
    if isinstance(weights, str | Path) and "\0" in str(weights):
        raise ArgumentError(f"weights path {str(weights)!r}: contains a NUL byte")
    network = resolve_network(
        weights,
        name,
        policy_head=opts.values.get("policy_head", "vanilla"),
        value_head=opts.values.get("value_head", "winner"),
    )
    path = str(weights) if isinstance(weights, str | Path) else None
    return Net(create_backend(name, network, text), network, path)
