"""The Python API where issue 29 found rough edges: traces of residual nets and of batches, the
intervention hook, FEN strings, errors in API terms, ``repr``, and the ONNX format metadata."""

from __future__ import annotations

from pathlib import Path

import chess
import numpy as np
import pytest

import lc0py
from lc0py.api.trace import NoAttentionError
from lc0py.errors import BackendOptionError, BackendUnavailable, Lc0pyError, PositionError
from lc0py.weights import random_network, save_network

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "weights" / "tiny-seed1.pb.gz"


@pytest.fixture(scope="module")
def residual_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("nets") / "res-tiny.pb.gz"
    save_network(random_network("res-tiny", seed=48), path)
    return path


def test_trace_of_a_residual_net_is_per_block(residual_path: Path) -> None:
    with lc0py.load(residual_path, backend="numpy") as net:
        trace = net.trace(chess.Board())
        blocks = net.network.num_blocks  # type: ignore[union-attr]
    assert trace.body == "residual" and len(trace.blocks) == blocks > 0
    assert trace.blocks[-1] is trace.activations[f"block{blocks - 1}.output"]
    assert trace.blocks[0].shape[1:] == (8, 8)
    with pytest.raises(NoAttentionError, match="residual .* no attention maps.*trace.blocks"):
        trace.attention[0]
    assert isinstance(NoAttentionError("x"), Lc0pyError) and isinstance(NoAttentionError("x"), IndexError)


def test_trace_many_is_the_batch_of_single_traces() -> None:
    boards = [chess.Board(), chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")]
    with lc0py.load(TINY, backend="numpy") as net:
        batch = net.trace_many(boards)
        single = [net.trace(board) for board in boards]
    assert len(batch) == 2 and batch[0].body == "attention"
    for a, b in zip(batch, single, strict=True):
        assert len(a.attention) == len(a.blocks) == 2
        np.testing.assert_allclose(a.attention[1], b.attention[1], rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(a.blocks[-1], b.blocks[-1], rtol=1e-4, atol=1e-5)
        assert a.evaluation.best_move == b.evaluation.best_move


def test_intervention_reads_and_replaces_an_activation(residual_path: Path) -> None:
    seen: list[str] = []

    def read_only(key: str, value: np.ndarray) -> None:
        seen.append(key)

    def zero_mha(key: str, value: np.ndarray) -> np.ndarray | None:
        return np.zeros_like(value) if key == "encoder1.mha" else None

    with lc0py.load(TINY, backend="numpy") as net:
        plain = net.trace(chess.Board())
        observed = net.trace(chess.Board(), intervene=read_only)
        patched = net.trace(chess.Board(), intervene=zero_mha)
    assert "encoder0.output" in seen and "value.logits" in seen
    assert observed.evaluation.wdl == plain.evaluation.wdl  # reading changes nothing
    assert not patched.activations["encoder1.mha"].any()  # the trace records the patched value
    assert patched.evaluation.wdl != plain.evaluation.wdl  # and the rest of the pass follows it
    with lc0py.load(residual_path, backend="numpy") as net, pytest.raises(ValueError, match="shape"):
        net.trace(chess.Board(), intervene=lambda key, value: value[:, :1] if key == "input" else None)


def test_fen_strings_are_positions() -> None:
    fen = "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3"
    with lc0py.load(TINY, backend="numpy") as net:
        assert net.evaluate(fen).policy == net.evaluate(chess.Board(fen)).policy
        assert net.evaluate("startpos").policy == net.evaluate(chess.Board()).policy
        with pytest.raises(PositionError, match="not a fen"):
            net.evaluate("not a fen")
        with pytest.raises(PositionError, match="chess.Board, a FEN string"):
            net.evaluate(3.5)  # type: ignore[arg-type]


def test_errors_name_the_api_not_the_cli() -> None:
    with pytest.raises(BackendUnavailable) as bad_backend:
        lc0py.load(TINY, backend="cuda16")
    assert "backend 'cuda16'" in str(bad_backend.value) and "--backend" not in str(bad_backend.value)
    assert "did you mean 'cuda-fp16'" in str(bad_backend.value)
    with pytest.raises(BackendOptionError) as bad_option:
        lc0py.load(TINY, backend="numpy", options="precison=fp64")
    assert str(bad_option.value).startswith("options:") and "--backend-opts" not in str(bad_option.value)


def test_repr_names_the_net(residual_path: Path) -> None:
    with lc0py.load(TINY, backend="numpy") as net:
        assert repr(net) == (f"Net(path={str(TINY)!r}, body='attention 2x64, 4 heads', backend='numpy')")
    with lc0py.load(residual_path, backend="numpy") as net:
        assert "body='residual " in repr(net) and "res-tiny.pb.gz" in repr(net)


def test_exported_onnx_says_its_formats(residual_path: Path) -> None:
    pytest.importorskip("onnx")
    from lc0py.backends.onnx.export import network_to_onnx
    from lc0py.weights import load_network

    for path, body in ((TINY, "attention 2x64, 4 heads"), (residual_path, "residual ")):
        network = load_network(path)
        meta = {p.key: p.value for p in network_to_onnx(network).metadata_props}
        assert meta["lc0.input_format"].startswith("INPUT_")
        assert meta["lc0.input_format"] == "INPUT_" + {
            1: "CLASSICAL_112_PLANE", 2: "112_WITH_CASTLING_PLANE", 3: "112_WITH_CANONICALIZATION",
            4: "112_WITH_CANONICALIZATION_HECTOPLIES", 5: "112_WITH_CANONICALIZATION_V2",
        }[int(network.format.input)]
        assert meta["lc0.value_format"] in ("VALUE_WDL", "VALUE_CLASSICAL")
        assert meta["lc0.moves_left"] == ("MOVES_LEFT_V1" if network.has_moves_left else "MOVES_LEFT_NONE")
        assert meta["lc0.policy_format"].startswith("POLICY_")
        assert meta["lc0py.body"].startswith(body) and meta["lc0py.version"] == lc0py.__version__
