"""``lc0py.load`` / ``Net``: evaluations equal the float64 reference, history comes from the move
stack, batching changes nothing, traces are consistent with the forward pass."""

from __future__ import annotations

import pydoc
from pathlib import Path

import chess
import numpy as np
import pytest

import lc0py
from lc0py.backends.accuracy import relative_error
from lc0py.chess import PositionHistory, encode_batch, legal_moves_with_indices
from lc0py.errors import BackendUnavailable, Lc0pyError
from lc0py.model.forward import forward
from lc0py.model.layers import merge_heads, split_heads
from lc0py.weights import load_network

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "weights" / "tiny-seed1.pb.gz"


@pytest.fixture(scope="module")
def net64() -> lc0py.Net:
    return lc0py.load(TINY, backend="numpy", options="precision=fp64")


def _board(*san: str) -> chess.Board:
    board = chess.Board()
    for move in san:
        board.push_san(move)
    return board


def _reference_policy(board: chess.Board, temperature: float = 1.0) -> dict[chess.Move, float]:
    network = load_network(TINY)
    enc = PositionHistory.from_board(board).encode(int(network.format.input))
    logits = forward(network, encode_batch([enc]).dense(np.float64), np.float64).policy[0]
    moves, idx = legal_moves_with_indices(board, enc.transform)
    z = logits[idx] / temperature
    p = np.exp(z - z.max())
    return dict(zip(moves, p / p.sum(), strict=True))


@pytest.mark.parametrize("temperature", [1.0, 0.5, 2.5])
def test_policy_is_the_legal_softmax_of_the_reference(net64: lc0py.Net, temperature: float) -> None:
    board = _board("d4", "Nf6", "c4")
    ev = net64.evaluate(board, temperature=temperature)
    ref = _reference_policy(board, temperature)
    assert set(ev.policy) == set(board.legal_moves) == set(ref)
    assert max(abs(ev.policy[m] - ref[m]) for m in ref) < 1e-6  # backends return float32 logits
    probs = list(ev.policy.values())
    assert probs == sorted(probs, reverse=True) and ev.best_move == max(ref, key=ref.__getitem__)
    assert abs(sum(ev.wdl) - 1) < 1e-6 and ev.q == pytest.approx(ev.wdl[0] - ev.wdl[2])
    assert ev.moves_left is not None and ev.fen == board.fen()


def test_history_comes_from_the_move_stack(net64: lc0py.Net) -> None:
    played = _board("e4", "e5", "Nf3", "Nc6")
    bare = chess.Board(played.fen())  # same position, no history
    a, b = net64.evaluate(played), net64.evaluate(bare)
    assert a.fen == b.fen and a.wdl != b.wdl  # the history planes differ
    assert net64.evaluate(PositionHistory.from_board(played)) == a


def test_evaluate_many_in_bounded_batches(net64: lc0py.Net, monkeypatch: pytest.MonkeyPatch) -> None:
    boards = [_board(), _board("e4"), _board("e4", "c5"), chess.Board("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1")]
    sizes: list[int] = []
    evaluate = net64.backend.evaluate
    monkeypatch.setattr(net64.backend, "evaluate", lambda batch: sizes.append(len(batch)) or evaluate(batch))
    many = net64.evaluate_many(boards, batch_size=3)
    assert sizes == [3, 1]
    assert many == [net64.evaluate(b) for b in boards]
    assert many[3].policy == {} and many[3].best_move is None  # stalemate


def test_bad_arguments(net64: lc0py.Net) -> None:
    with pytest.raises(ValueError, match="temperature"):
        net64.evaluate(chess.Board(), temperature=0)
    with pytest.raises(ValueError, match="batch_size"):
        net64.evaluate_many([chess.Board()], batch_size=-1)
    with pytest.raises(TypeError):
        net64.evaluate(42)  # type: ignore[arg-type]


def test_unknown_backend_is_refused_before_loading(tmp_path: Path) -> None:
    with pytest.raises(BackendUnavailable, match="unknown backend"):
        lc0py.load(tmp_path / "does-not-exist.pb.gz", backend="cudaa")
    with pytest.raises(Lc0pyError):
        lc0py.load(tmp_path / "does-not-exist.pb.gz", backend="numpy")


def test_random_backend_needs_no_weights() -> None:
    with lc0py.load(None, backend="random") as net:
        ev = net.evaluate(_board("e4"))
        assert len(ev.policy) == 20 and abs(sum(ev.policy.values()) - 1) < 1e-9
        with pytest.raises(Lc0pyError, match="trace needs a network"):
            net.trace(chess.Board())


def test_trace_attention_reproduces_the_attention_output() -> None:
    """``softmax(...) @ V`` with the traced probabilities gives the traced attention output."""
    from lc0py.model.layers import dense

    with lc0py.load(TINY, backend="numpy") as net:
        board = _board("e4", "e5")
        trace = net.trace(board)
        assert net.network is not None
        network = net.network
        assert len(trace.attention) == network.num_layers
        ev = net.evaluate(board)
    assert max(abs(trace.evaluation.policy[m] - ev.policy[m]) for m in ev.policy) < 1e-5
    for layer_index, (probs, layer) in enumerate(zip(trace.attention, network.encoders, strict=True)):
        assert probs.shape == (network.heads, 64, 64)
        assert np.all(probs >= 0) and np.allclose(probs.sum(-1), 1, atol=1e-5)
        x = trace.activations["embedding" if layer_index == 0 else f"encoder{layer_index - 1}.output"]
        v = split_heads(dense(x[None].astype(np.float32), layer.v), network.heads)[0]
        out = merge_heads((probs @ v)[None])[0]
        ref = trace.activations[f"encoder{layer_index}.attention"]
        assert relative_error(out, ref) < 1e-5


def test_help_lists_the_public_api() -> None:
    text = pydoc.render_doc(lc0py, renderer=pydoc.plaintext)
    names = ("load", "Net", "Evaluation", "Trace", "load_network", "create_backend", "available_backends")
    for name in names:
        assert name in lc0py.__all__ and name in text
    assert lc0py.load.__doc__ and "evaluate" in lc0py.load.__doc__


def test_iter_evaluate_streams(net64: lc0py.Net, monkeypatch: pytest.MonkeyPatch) -> None:
    """Results of the first batch come back before later boards are even produced."""
    events: list[str] = []
    evaluate = net64.backend.evaluate
    monkeypatch.setattr(net64.backend, "evaluate",
                        lambda batch: events.append(f"eval{len(batch)}") or evaluate(batch))

    def boards():  # type: ignore[no-untyped-def]
        for k in range(5):
            events.append(f"board{k}")
            yield _board(*(["e4"] if k % 2 else []))

    stream = net64.iter_evaluate(boards(), batch_size=2)
    first = next(stream)
    assert events == ["board0", "board1", "eval2"] and first.best_move is not None
    assert len(list(stream)) == 4 and events[-1] == "eval1"


def test_heads_of_a_multihead_net_by_option() -> None:
    multihead = ROOT / "weights" / "tiny-multihead-seed3.pb.gz"
    board = _board("e4")
    heads = {"policy_head": "optimistic", "value_head": "q"}
    with lc0py.load(multihead, backend="numpy") as vanilla, \
            lc0py.load(multihead, backend="numpy", options=heads) as other:
        assert other.network is not None and other.network.policy_head_name == "optimistic"
        a, b = vanilla.evaluate(board), other.evaluate(board)
        assert set(a.policy) == set(b.policy) and a.policy != b.policy and a.wdl != b.wdl


def test_load_takes_a_loaded_network(net64: lc0py.Net) -> None:
    network = load_network(TINY)
    with lc0py.load(network, backend="numpy", options="precision=fp64") as net:
        assert net.network is network
        assert net.evaluate(_board("d4")) == net64.evaluate(_board("d4"))


def test_trace_adds_what_a_gpu_backend_exposes(monkeypatch: pytest.MonkeyPatch) -> None:
    """A backend with ``gpu.evaluate_traced`` (the GPU backends) contributes its own taps; faked
    here from the reference itself, since CI has no GPU."""
    import types

    with lc0py.load(TINY, backend="numpy") as net:
        board = _board("e4")
        reference = net.trace(board)
        assert reference.device_activations == {}
        calls: list[bool] = []

        def evaluate_traced(batch, flash):  # type: ignore[no-untyped-def]
            calls.append(flash)
            taps = {"embedding": reference.activations["embedding"][None] + 1e-3}
            return net.backend.evaluate(batch), taps

        monkeypatch.setattr(net.backend, "gpu", types.SimpleNamespace(evaluate_traced=evaluate_traced),
                            raising=False)
        trace = net.trace(board)
    assert calls == [True] and set(trace.device_activations) == {"embedding"}
    got, want = trace.device_activations["embedding"], trace.activations["embedding"]
    assert got.shape == want.shape and 0 < relative_error(got, want) < 1e-2
