"""The numpy emulation of the FP8 path (lc0py/backends/gpu/fp8_emulation.py): it quantizes what
the device quantizes (the same e4m3 weights as the upload, bit for bit), its error against float64
is FP8-sized, and its outputs are finite."""

from __future__ import annotations

import numpy as np
import pytest

from lc0py.backends.accuracy import RTOL_FP8, relative_error
from lc0py.backends.gpu.fp8 import pack_fp8
from lc0py.backends.gpu.fp8_emulation import _fp8_layer, fake_quantize, fp8_forward
from lc0py.backends.gpu.fp8_quant import e4m3_decode
from lc0py.backends.gpu.weights import net_shape, pack_model
from lc0py.model import cast_network, forward
from lc0py.tools.verify import random_games_batch
from lc0py.weights.presets import random_network


def test_fake_quantize_error_is_fp8_sized() -> None:
    x = np.random.default_rng(0).standard_normal((64, 256)).astype(np.float32)
    x[3] = 0.0
    y = fake_quantize(x)
    assert np.all(np.isfinite(y)) and not np.any(y[3])
    rel = relative_error(y, x)
    assert 0.01 < rel < 0.04, rel


@pytest.mark.parametrize("per_channel", [True, False])
def test_emulated_weights_are_the_uploaded_ones(per_channel: bool) -> None:
    net = random_network("tiny", 4)
    s = net_shape(net)
    host, refs = pack_fp8(pack_model(net, np.float16), per_channel)
    for i, layer in enumerate(net.encoders):
        w8 = host.layers[i]
        cs = w8.qkv_cs if per_channel else np.ones(w8.qkv_q.shape[0], np.float32)
        assert cs is not None
        device_qkv = e4m3_decode(w8.qkv_q).astype(np.float64) * (cs.astype(np.float64) * refs.qkv[i])[:, None]
        emulated = _fp8_layer(layer, per_channel).qkvc
        rows = 3 * s.D + s.hc  # the device's alignment rows are zeros
        assert np.allclose(emulated, device_qkv[:rows], rtol=1e-6, atol=0), i
        assert not np.any(device_qkv[rows:])


def test_row_quantization_is_the_tensor_one_per_row() -> None:
    from lc0py.backends.gpu.fp8_emulation import fake_quantize_rows

    x = np.random.default_rng(1).standard_normal((6, 4, 32)).astype(np.float32)
    x[2, 1] = 0.0
    got = fake_quantize_rows(x)
    for i in range(6):
        for j in range(4):
            assert np.array_equal(got[i, j], fake_quantize(x[i, j])), (i, j)


@pytest.mark.parametrize(("per_channel", "per_row"), [(True, False), (False, False), (True, True)])
def test_emulation_error_against_float64(per_channel: bool, per_row: bool) -> None:
    net = random_network("tiny", 2)
    batch = random_games_batch(16, int(net.format.input), 3)
    ref = forward(cast_network(net, np.float64), batch.dense(np.float64), np.float64)
    out = fp8_forward(net, batch.dense(np.float32), per_channel=per_channel, per_row=per_row)
    for name in ("policy", "wdl", "moves_left"):
        got = getattr(out, name)
        assert np.all(np.isfinite(got)), name
        rel = relative_error(got, getattr(ref, name))
        # quantized, and FP8-sized on this 2-layer net (policy logits ~0.13, WDL ~0.02 measured)
        assert 1e-3 < rel < 0.3 < RTOL_FP8, (name, rel)
