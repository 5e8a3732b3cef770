"""Calibrated FP8 weights of residual nets without a GPU: GPTQ codes, the calibration file (round
trip, cache, refusals), the emulation with calibrated codes against a direct numpy model, and the
device path uploading exactly the codes the emulation uses."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from lc0py.backends.gpu.fp8_calibration import (
    Fp8Calibration,
    Fp8CalibrationError,
    calibrate,
    find_calibration,
    from_bytes,
    im2col,
    store_calibration,
    to_bytes,
    tower_digest,
)
from lc0py.backends.gpu.fp8_quant import (
    Fp8Weight,
    e4m3_decode,
    quantize_activation,
    quantize_per_channel,
    quantize_per_channel_gptq,
)
from lc0py.backends.gpu.fp8_residual import pack_residual_fp8
from lc0py.backends.gpu.fp8_residual_emulation import fp8_conv, fp8_residual_forward
from lc0py.backends.gpu.weights_residual import conv_matrix, pack_residual_model, residual_shape
from lc0py.model.residual import conv2d
from lc0py.weights.presets import random_network
from lc0py.weights.residual import Conv, ResidualNetwork


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LC0PY_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _net(seed: int = 0) -> ResidualNetwork:
    net = random_network("res-tiny", seed, filters=32, se_hidden=8)
    assert isinstance(net, ResidualNetwork)
    return net


def _planes(n: int, seed: int) -> np.ndarray:
    return (np.random.default_rng(seed).random((n, 112, 8, 8)) < 0.2).astype(np.float32)


# ---- GPTQ ------------------------------------------------------------------------------------
def test_gptq_with_uncorrelated_inputs_is_round_to_nearest() -> None:
    w = np.random.default_rng(0).standard_normal((24, 48))
    rtn, g = quantize_per_channel(w), quantize_per_channel_gptq(w, 5.0 * np.eye(48))
    np.testing.assert_array_equal(g.q, rtn.q)
    np.testing.assert_array_equal(g.col_scale, rtn.col_scale)
    assert g.ref == rtn.ref


def test_gptq_cuts_the_output_error_on_correlated_inputs() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2000, 8)) @ rng.standard_normal((8, 64)) + 0.1 * rng.standard_normal((2000, 64))
    w = rng.standard_normal((32, 64))
    g, rtn = quantize_per_channel_gptq(w, x.T @ x), quantize_per_channel(w)
    np.testing.assert_array_equal(g.col_scale, rtn.col_scale)  # same scales, other codes
    assert not np.isin(g.q, (0x7F, 0xFF)).any()

    def out_err(fw: Fp8Weight) -> float:
        return float(np.linalg.norm(x @ (fw.dequantize() - w).T))

    assert out_err(g) < 0.5 * out_err(rtn)


def test_gptq_zeroes_weights_of_inputs_that_are_always_zero() -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal((500, 16))
    x[:, 3] = 0.0
    g = quantize_per_channel_gptq(rng.standard_normal((8, 16)), x.T @ x)
    assert np.all(g.q[:, 3] & 0x7F == 0)


def test_im2col_rows_give_the_convolution() -> None:
    rng = np.random.default_rng(3)
    conv = Conv(rng.standard_normal((8, 16, 3, 3)).astype(np.float32), np.zeros(8, np.float32))
    x = rng.standard_normal((2, 16, 8, 8)).astype(np.float32)
    y = (im2col(x) @ conv_matrix(conv).astype(np.float64).T).reshape(2, 8, 8, 8).transpose(0, 3, 1, 2)
    np.testing.assert_allclose(y, conv2d(x.astype(np.float64), conv), rtol=1e-9, atol=1e-9)


# ---- the file --------------------------------------------------------------------------------
def test_calibration_round_trips_through_bytes_and_the_cache(cache: Path) -> None:
    net = _net()
    cal = calibrate(net, _planes(32, 0), batch=16)
    assert len(cal.weights) == 1 + 2 * net.num_blocks and cal.positions == 32
    back = from_bytes(to_bytes(cal), net, "x")
    assert back.digest == cal.digest == tower_digest(net)
    for a, b in zip(cal.weights, back.weights, strict=True):
        np.testing.assert_array_equal(a.q, b.q)
        np.testing.assert_array_equal(a.col_scale, b.col_scale)
        assert a.ref == b.ref
    assert find_calibration(net) is None  # nothing cached yet: the uncalibrated path
    path = store_calibration(cal)
    assert path is not None and path.parent.parent == cache
    found = find_calibration(net)
    assert found is not None and all(
        np.array_equal(a.q, b.q) for a, b in zip(found.weights, cal.weights, strict=True))
    assert find_calibration(_net(seed=1)) is None  # another net: another entry name
    path.write_bytes(path.read_bytes()[:-7] + b"garbage")  # damaged: the cache drops it
    assert find_calibration(net) is None and not path.exists()


def _arrays(cal: Fp8Calibration) -> dict[str, np.ndarray]:
    import io

    return dict(np.load(io.BytesIO(to_bytes(cal))))


def _bytes(arrays: dict[str, np.ndarray]) -> bytes:
    import io

    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


@pytest.mark.parametrize("damage, message", [
    (lambda a: a.update(version=np.array(9)), "version 9, this lc0py reads 1"),
    (lambda a: a.update(digest=np.array("0" * 64)), "made for another net"),
    (lambda a: a.update(q1=a["q1"][:, :-1]), "convolution 1: codes uint8"),
    (lambda a: a.update(q2=np.full_like(a["q2"], 0x7F)), "convolution 2: NaN codes"),
    (lambda a: a.update(cs0=a["cs0"] * 0.5), "convolution 0: channel scales"),
    (lambda a: a.update(ref3=np.array(-1.0)), "convolution 3: scale -1.0"),
    (lambda a: a.pop("cs4"), "convolution 4 missing"),
    (lambda a: a.update(q99=a["q0"]), "more convolutions"),
])
def test_a_bad_calibration_is_refused_in_one_line(damage, message) -> None:  # type: ignore[no-untyped-def]
    net = _net()
    arrays = _arrays(calibrate(net, _planes(16, 1)))
    damage(arrays)
    with pytest.raises(Fp8CalibrationError) as info:
        from_bytes(_bytes(arrays), net, "/c/f.npz")
    text = str(info.value)
    assert "\n" not in text and text.startswith("FP8 calibration /c/f.npz: ") and message in text


def test_not_a_calibration_file_is_refused_in_one_line() -> None:
    with pytest.raises(Fp8CalibrationError, match=r"^FP8 calibration f: not a calibration file \(") as info:
        from_bytes(b"PK\x03\x04 not a zip", _net(), "f")
    assert "\n" not in str(info.value)


def test_a_verified_entry_that_does_not_fit_is_refused(cache: Path) -> None:
    net = _net()
    arrays = _arrays(calibrate(net, _planes(16, 1)))
    arrays["q0"] = arrays["q0"][:1]
    from lc0py.backends.gpu.fp8_calibration import calibration_store

    store = calibration_store()
    assert store is not None
    store.store(f"{tower_digest(net)}.npz", _bytes(arrays), tower_digest(net))
    with pytest.raises(Fp8CalibrationError, match="convolution 0: codes"):
        find_calibration(net)


# ---- the emulation and the device path use the same codes ------------------------------------
def test_emulated_calibrated_conv_equals_a_direct_fp8_model() -> None:
    rng = np.random.default_rng(4)
    net = _net()
    cal = calibrate(net, _planes(32, 2))
    conv, fw = net.blocks[0].conv1, cal.weights[1]
    x = np.maximum(rng.standard_normal((4, 32, 8, 8)), 0).astype(np.float32)
    q, scale = quantize_activation(x.astype(np.float16).astype(np.float32).reshape(-1))
    xd = e4m3_decode(q).reshape(x.shape).astype(np.float64) * scale
    wd = (e4m3_decode(fw.q).astype(np.float64) * (fw.col_scale.astype(np.float64) * fw.ref)[:, None])
    direct = conv2d(xd, Conv(wd.reshape(32, 3, 3, 32).transpose(0, 3, 1, 2), np.asarray(conv.b, np.float64)))
    got = fp8_conv(x, conv, per_channel=True, winograd=False, calibrated=fw)
    np.testing.assert_allclose(got, direct, rtol=1e-5, atol=1e-5)
    rtn = fp8_conv(x, conv, per_channel=True, winograd=False)
    assert not np.array_equal(got, rtn)  # the calibrated codes are used, not round-to-nearest
    # per tensor or Winograd: the calibration does not apply (other scales / layout)
    per_tensor = fp8_conv(x, conv, False, False, calibrated=fw)
    np.testing.assert_array_equal(per_tensor, fp8_conv(x, conv, False, False))


def test_calibration_improves_the_emulated_net() -> None:
    net = _net(seed=5)
    cal = calibrate(net, _planes(256, 6))
    from lc0py.model import cast_network
    from lc0py.model.residual import forward_residual

    planes = _planes(64, 7)
    ref = forward_residual(cast_network(net, np.float64), planes.astype(np.float64), np.float64)

    def err(c: Fp8Calibration | None) -> float:
        out = fp8_residual_forward(net, planes, calibration=c)
        assert np.all(np.isfinite(out.policy))
        return float(np.sqrt(((out.policy - ref.policy) ** 2).mean()))

    assert err(cal) < err(None)


def test_device_record_holds_the_calibrated_codes() -> None:
    net = _net()
    cal = calibrate(net, _planes(16, 3))
    shape = residual_shape(net, False)
    host, refs, why = pack_residual_fp8(pack_residual_model(net, np.float16), shape, True, cal.weights)
    assert not any(why)
    for rec, ref, fw in zip(host.convs, refs, cal.weights, strict=True):
        assert rec is not None and rec.cs is not None
        np.testing.assert_array_equal(rec.q, fw.q)
        np.testing.assert_array_equal(rec.cs, fw.col_scale)
        assert ref == fw.ref
    # per tensor: round-to-nearest, the calibration ignored
    host_t, _, _ = pack_residual_fp8(pack_residual_model(net, np.float16), shape, False, cal.weights)
    assert host_t.convs[1] is not None and not np.array_equal(host_t.convs[1].q, cal.weights[1].q)


@pytest.mark.parametrize("scales", ["channel", "tensor"])
def test_gpu_network_picks_up_the_cached_calibration(cache: Path, scales: str) -> None:
    from lc0py.backends.gpu.network import GpuNetwork
    from lc0py.backends.gpu.options import GpuOptions
    from tests.backends.gpu.test_fp8_residual import BatchedRecordingGemms, Fp16GemmCounter

    net = _net()
    cal = calibrate(net, _planes(16, 3))
    assert store_calibration(cal) is not None
    opts = GpuOptions.from_text(f"graphs=off,max_batch=4,precision=fp8,fp8_scales={scales}")
    gpu = GpuNetwork(Fp16GemmCounter(), net, fp16=True, options=opts, fp8_gemms=BatchedRecordingGemms())
    try:
        if scales == "channel":
            assert gpu.fp8_calibration is not None and gpu.fp8_calibration.digest == cal.digest
        else:
            assert gpu.fp8_calibration is None
    finally:
        gpu.close()
