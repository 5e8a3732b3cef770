"""The one error metric and tolerance rule (``lc0py.backends.accuracy``)."""

from __future__ import annotations

import numpy as np
import pytest

from lc0py.backends.accuracy import (
    RTOL_FP16,
    RTOL_FP32,
    error_stats,
    flash_tolerance,
    relative_error,
    tolerance,
)


def test_relative_error_is_the_norm_ratio() -> None:
    rng = np.random.default_rng()
    ref = rng.standard_normal((4, 33))
    noise = 1e-3 * rng.standard_normal(ref.shape)
    assert relative_error(ref + noise, ref) == pytest.approx(np.linalg.norm(noise) / np.linalg.norm(ref))
    assert relative_error(ref.astype(np.float32), ref) < 1e-7


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_never_passes(bad: float) -> None:
    ref = np.random.default_rng().standard_normal(10)
    out = ref.copy()
    out[3] = bad
    assert relative_error(out, ref) == float("inf") and relative_error(ref, out) == float("inf")
    assert error_stats(out, ref).rel == float("inf")


def test_zero_reference_and_shapes() -> None:
    assert relative_error(np.zeros(3), np.zeros(3)) == 0.0
    assert relative_error(np.ones(3), np.zeros(3)) == float("inf")
    with pytest.raises(ValueError, match="shape"):
        relative_error(np.zeros(3), np.zeros(4))


def test_tolerances() -> None:
    assert tolerance(fp16=False) == RTOL_FP32 == 1e-4 and tolerance(fp16=True) == RTOL_FP16 == 1e-2
    # flash-attention's rule: twice the same-dtype fallback's error plus the dtype's rounding unit
    assert flash_tolerance(3e-3, fp16=True) == pytest.approx(6e-3 + 2**-10)
    assert flash_tolerance(0.0, fp16=False) == pytest.approx(2**-23)


def test_error_stats() -> None:
    s = error_stats(np.array([1.0, 2.5]), np.array([1.0, 2.0]))
    assert s.max_abs == 0.5 and s.mean_abs == 0.25 and s.rel == pytest.approx(0.5 / np.sqrt(5))


def test_verify_flash_rule() -> None:
    from lc0py.tools.verify import ErrorRow, flash_failures

    rows = [ErrorRow("fallback", "L0 attention", 0, 0, 1e-3), ErrorRow("flash", "L0 attention", 0, 0, 2.5e-3),
            ErrorRow("fallback", "wdl", 0, 0, 1e-3), ErrorRow("flash", "wdl", 0, 0, 3.5e-3)]
    bad = flash_failures(rows, fp16=True)
    assert len(bad) == 1 and bad[0].startswith("flash wdl:")  # 3.5e-3 > 2e-3 + 9.8e-4


def test_flash_rule_holds_on_the_recorded_gpu_runs() -> None:
    """The committed ``lc0py verify`` logs from the H100/H200 (bench/results) pass the flash rule:
    it is strict enough to mean something and loose enough for the kernel as it is."""
    import re
    from pathlib import Path

    from lc0py.tools.verify import ErrorRow, flash_failures

    results = Path(__file__).resolve().parents[2] / "bench" / "results"
    logs = sorted(results.rglob("*.log"))
    row = re.compile(r"^(flash|fallback)\s+(.+?)\s+(\S+)\s+(\S+)\s+(\S+)$")
    checked = 0
    for log in logs:
        for block in log.read_text().split("verify: backend ")[1:]:
            fp16 = block.split(",")[0].strip().endswith("fp16")
            rows = [ErrorRow(m[1], m[2].strip(), float(m[3]), float(m[4]), float(m[5]))
                    for m in (row.match(line.strip()) for line in block.splitlines()) if m]
            assert flash_failures(rows, fp16) == [], f"{log.name}: {flash_failures(rows, fp16)}"
            checked += sum(r.path == "flash" for r in rows)
    if not checked:
        pytest.skip("no recorded GPU verify logs under bench/results")
    assert checked > 50
