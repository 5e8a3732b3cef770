"""``lc0py verify`` for the FP8 path, on a stand-in GPU backend that computes the numpy FP8
emulation (no GPU here): the FP8 rule passes a device that matches FP8 arithmetic, fails one whose
outputs carry a wrong scale, and names the bound it used."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from lc0py.backends.gpu.fp8_emulation import fp8_forward
from lc0py.backends.gpu.options import GpuOptions
from lc0py.cli.main import main
from lc0py.tools.verify import ErrorRow, fp8_failures


class _Fp8Standin:
    """What verify reads of a cuda-fp8 backend; outputs from the numpy FP8 emulation x ``skew``."""

    name = "cuda-fp8"

    def __init__(self, network: Any, skew: float) -> None:
        self.network, self.skew = network, skew
        choice = SimpleNamespace(kernel=SimpleNamespace(value="flash_attention_f16"), reason="stand-in")
        self.gpu = SimpleNamespace(
            fp8=True, fp16=True, uses_flash=False, flash_choice=choice, options=GpuOptions(precision="fp8"),
            p=SimpleNamespace(info=SimpleNamespace(name="stand-in", arch="sm_90")),
            evaluate_traced=self._traced,
        )

    def _out(self, batch: Any) -> Any:
        out = fp8_forward(self.network, batch.dense(np.float32))
        return SimpleNamespace(policy=out.policy * self.skew, wdl=out.wdl, moves_left=out.moves_left)

    def _traced(self, batch: Any, flash: bool) -> tuple[Any, dict[str, np.ndarray]]:
        return self._out(batch), {}

    def evaluate(self, batch: Any) -> Any:
        return self._out(batch)

    def close(self) -> None:
        pass


@pytest.mark.parametrize(("skew", "code"), [(1.0, 0), (1.5, 1)])
def test_fp8_rule_against_the_emulation(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], skew: float, code: int
) -> None:
    import lc0py.backends.registry as registry

    monkeypatch.setattr(registry, "create_backend", lambda name, net, opts=None: _Fp8Standin(net, skew))
    monkeypatch.setattr(registry, "check_name", lambda name: None)
    args = ["verify", "--preset", "tiny", "--backend", "cuda-fp8", "--batch", "4", "--seed", "3"]
    assert main(args) == code
    out = capsys.readouterr().out
    assert "fp8-emu" in out and "2 x the numpy fp8 emulation" in out
    assert ("PASS" in out) == (code == 0)
    if code:
        assert "backend policy logits: " in out and "> 2 x fp8 emulation" in out


def test_fp8_failures_bounds() -> None:
    rows = [
        ErrorRow("fp8-emu", "policy logits", 0, 0, 0.10),
        ErrorRow("fallback", "policy logits", 0, 0, 0.20),  # 2 x 0.1 + 0.01 = 0.21: inside
        ErrorRow("backend", "policy logits", 0, 0, 0.22),  # outside
        ErrorRow("fallback", "L0 attention", 0, 0, 0.9),  # no emulated row: the sanity bound 1
        ErrorRow("fallback", "L1 attention", 0, 0, float("inf")),
    ]
    bad = fp8_failures(rows)
    assert len(bad) == 2 and bad[0].startswith("backend policy logits") and "L1 attention" in bad[1]
