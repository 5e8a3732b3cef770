"""Presets and the random generator: determinism, overrides, and weight scaling that gives useful nets."""

from __future__ import annotations

import random
from typing import Any

import chess
import numpy as np
import pytest

from lc0py.chess.testing import random_moves
from lc0py.errors import UsageError
from lc0py.weights import PRESETS, preset_config, random_network
from lc0py.weights.network import Activation, InputEmbedding, InputFormat, NetworkKind, OutputFormat


def _arrays(obj: Any) -> list[np.ndarray]:
    out: list[np.ndarray] = []
    stack = [obj]
    while stack:
        o = stack.pop()
        if isinstance(o, np.ndarray):
            out.append(o)
        elif isinstance(o, list | tuple):
            stack.extend(o)
        elif hasattr(o, "__dataclass_fields__"):
            stack.extend(getattr(o, f) for f in o.__dataclass_fields__ if f != "extra")
    return out


def test_deterministic_for_a_seed() -> None:
    a, b, c = (random_network("tiny", seed=s) for s in (5, 5, 6))
    for x, y, z in zip(_arrays(a), _arrays(b), _arrays(c), strict=True):
        assert np.array_equal(x, y)
        assert x.dtype == np.float32
        if x.size > 1:
            assert not np.array_equal(x, z)


def test_t82_shape_and_format() -> None:
    c = PRESETS["t82"]
    assert (c.embedding_size, c.layers, c.heads, c.ffn_size) == (768, 15, 24, 1024)
    assert (c.smolgen_channels, c.smolgen_hidden, c.smolgen_gen) == (32, 256, 256)
    assert (c.policy_embedding, c.policy_dmodel, c.value_channels, c.value_hidden) == (768, 768, 32, 128)
    assert (c.moves_left_channels, c.moves_left_hidden) == (8, 128)
    assert [PRESETS[n].heads for n in ("t82-h12", "t82-h8", "t82-h6")] == [12, 8, 6]
    net = random_network("t82", layers=1)
    f = net.format
    assert f.input == InputFormat.WITH_CANONICALIZATION_HECTOPLIES
    assert f.network == NetworkKind.ATTENTIONBODY_WITH_HEADFORMAT and f.output == OutputFormat.WDL
    assert f.input_embedding == InputEmbedding.PE_MAP
    assert (net.default_act, net.smolgen_act, net.ffn_act) == (
        Activation.MISH,
        Activation.SWISH,
        Activation.RELU_2,
    )
    assert net.embedding.mult_gate is not None and net.moves_left is not None


def test_overrides() -> None:
    net = random_network(
        "tiny",
        heads=8,
        layers=3,
        embedding="pe_dense",
        smolgen=False,
        moves_left=False,
        gating=False,
        default_activation="relu",
        ffn_activation="selu",
        smolgen_activation="mish",
        input_format=3,
        wdl=False,
    )
    assert (net.heads, net.num_layers, net.embedding.kind) == (8, 3, InputEmbedding.PE_DENSE)
    assert net.smolgen_w is None and all(e.smolgen is None for e in net.encoders)
    assert net.moves_left is None and net.embedding.mult_gate is None
    assert (net.default_act, net.ffn_act) == (Activation.RELU, Activation.SELU)
    assert net.format.input == 3 and net.value.fc2.n_out == 1 and net.format.output == OutputFormat.CLASSICAL
    assert net.encoder_eps == 1e-3 and net.alpha == pytest.approx(6**-0.25)

    mh = random_network("tiny", multihead=True)
    assert mh.format.network == NetworkKind.ATTENTIONBODY_WITH_MULTIHEADFORMAT
    assert mh.available_policy_heads == ("vanilla", "optimistic") and mh.available_value_heads == (
        "winner",
        "q",
    )
    assert mh.extra["policy_heads"]["optimistic"].embedding is mh.policy.embedding  # shared ip_pol
    none = random_network("tiny", embedding="none")
    assert none.format.input_embedding == InputEmbedding.NONE and none.embedding.kind == InputEmbedding.PE_MAP


@pytest.mark.parametrize(
    "preset, overrides, message",
    [
        ("t83", {}, "preset 't83': unknown"),
        ("tiny", {"heads": 5}, "heads .5. must divide"),
        ("tiny", {"embedding": "pe_sparse"}, "embedding 'pe_sparse': unknown"),
        ("tiny", {"ffn_activation": "softmax"}, "ffn_activation 'softmax': unknown"),
        ("tiny", {"input_format": 6}, "input format 6: unknown"),
        ("tiny", {"layers": 0}, "layers must be positive"),
        ("tiny", {"colour": "blue"}, "unknown network setting"),
        ("tiny", {"multihead": True, "policy_heads": ("vanilla", "greedy")}, "unknown head name"),
    ],
)
def test_bad_settings(preset: str, overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        preset_config(preset, **overrides)


def test_tiny_is_small_and_fast() -> None:
    net = random_network("tiny")
    assert net.parameter_count() < 250_000


# --------------------------------------------------------------------------- useful outputs


def _random_positions(count: int, seed: int) -> list[chess.Board]:
    rng = random.Random(seed)
    boards = []
    for _ in range(count):
        board = chess.Board()
        random_moves(board, rng.randrange(0, 60), rng)
        if board.is_game_over():
            board.pop()
        boards.append(board)
    return boards


def _evaluate(net: Any, boards: list[chess.Board]) -> tuple[list[np.ndarray], np.ndarray, np.ndarray, float]:
    """Legal-move logits per position, WDL, moves-left and the largest |intermediate|."""
    forward_mod = pytest.importorskip("lc0py.model.forward")
    from lc0py.chess import PositionHistory, legal_moves_with_indices

    encoded = [PositionHistory.from_board(b).encode(int(net.format.input)) for b in boards]
    planes = np.stack([e.dense() for e in encoded])
    trace: dict[str, np.ndarray] = {}
    out = forward_mod.forward(net, planes, np.float32, trace=trace)
    peak = max(float(np.abs(v).max()) for v in trace.values())
    logits = []
    for i, (board, enc) in enumerate(zip(boards, encoded, strict=True)):
        _, idx = legal_moves_with_indices(board, enc.transform)
        logits.append(out.policy[i][idx])
    return logits, np.asarray(out.wdl), np.asarray(out.moves_left), peak


@pytest.mark.parametrize(
    "preset, overrides",
    [
        pytest.param("tiny", {}, id="tiny"),
        pytest.param("tiny", {"embedding": "pe_dense"}, id="tiny-pe_dense"),
        pytest.param(
            "tiny", {"default_activation": "relu", "ffn_activation": "relu", "smolgen": False}, id="tiny-relu"
        ),
        pytest.param("t82", {"layers": 2}, id="t82-2layers"),
    ],
)
def test_random_nets_give_useful_outputs(preset: str, overrides: dict[str, Any]) -> None:
    """Policy logits std ~1-3, WDL not saturated, outputs differ across positions, fp16-safe range."""
    boards = _random_positions(12, seed=1)
    for seed in (0, 1):
        net = random_network(preset, seed=seed, **overrides)
        logits, wdl, mlh, peak = _evaluate(net, boards)
        stds = [float(np.std(x)) for x in logits if x.size > 2]
        assert 0.7 < float(np.median(stds)) < 4.0, stds
        assert float(wdl.max()) < 0.99, wdl  # no outcome is certain
        q = wdl[:, 0] - wdl[:, 2]
        assert float(np.std(q)) > 0.005, q  # the value moves with the position
        assert float(np.std(mlh)) > 0.005 and float(mlh.min()) >= 0.0
        assert peak < 1e4, peak  # far inside fp16's 65504 (pre-LN sums included)
