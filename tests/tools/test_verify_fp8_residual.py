"""``lc0py verify --backend cuda-fp8`` on a residual net, on a stand-in GPU backend that computes the
residual FP8 emulation (no GPU here): verify runs the residual emulation as its "fp8-emu" rows,
passes a device that matches it and fails one whose outputs carry a wrong scale."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from lc0py.backends.gpu.fp8_residual_emulation import fp8_residual_forward
from lc0py.backends.gpu.options import GpuOptions
from lc0py.cli.main import main
from lc0py.model import forward


class _ResidualFp8Standin:
    name = "cuda-fp8"

    def __init__(self, network: Any, skew: float) -> None:
        self.network, self.skew = network, skew
        choice = SimpleNamespace(kernel=SimpleNamespace(value="none"), reason="stand-in")
        self.gpu = SimpleNamespace(
            fp8=True, fp16=True, uses_flash=False, flash_choice=choice, options=GpuOptions(precision="fp8"),
            shape=SimpleNamespace(winograd=False),
            p=SimpleNamespace(info=SimpleNamespace(name="stand-in", arch="sm_90")),
            evaluate_traced=self._traced,
        )

    def _out(self, batch: Any) -> Any:
        out = fp8_residual_forward(self.network, batch.dense(np.float32))
        return SimpleNamespace(policy=out.policy * self.skew, wdl=out.wdl, moves_left=out.moves_left)

    def _traced(self, batch: Any, flash: bool) -> tuple[Any, dict[str, np.ndarray]]:
        trace: dict[str, np.ndarray] = {}
        forward(self.network, batch.dense(np.float32), np.float32, trace=trace)
        n, c = len(batch), self.network.filters
        taps = {k: v.reshape(n, c, 64).transpose(0, 2, 1) for k, v in trace.items()
                if k == "input" or k.endswith(".output")}
        return self._out(batch), taps

    def evaluate(self, batch: Any) -> Any:
        return self._out(batch)

    def close(self) -> None:
        pass


@pytest.mark.parametrize(("skew", "code"), [(1.0, 0), (1.5, 1)])
def test_residual_fp8_rule_against_the_emulation(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], skew: float, code: int
) -> None:
    import lc0py.backends.registry as registry

    monkeypatch.setattr(registry, "create_backend",
                        lambda name, net, opts=None: _ResidualFp8Standin(net, skew))
    monkeypatch.setattr(registry, "check_name", lambda name: None)
    args = ["verify", "--preset", "res-tiny", "--backend", "cuda-fp8", "--batch", "4", "--seed", "3"]
    assert main(args) == code
    out = capsys.readouterr().out
    assert "fp8-emu" in out and "2 x the numpy fp8 emulation" in out
    assert ("PASS" in out) == (code == 0)
