"""``lc0py verify`` on CPU backends: PASS against the reference, FAIL (exit 1) on wrong outputs."""

from __future__ import annotations

import pytest

from lc0py.cli.main import main


def test_numpy_backend_passes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "--preset", "tiny", "--backend", "numpy", "--batch", "3", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "PASS" in out and "policy logits" in out and "limit 0.0001" in out


def test_random_planes_option(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["verify", "--preset", "tiny", "--backend", "numpy", "--batch", "2", "--planes", "random"]) == 0
    )
    assert "(random)" in capsys.readouterr().out


def test_wrong_outputs_fail_with_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "--preset", "tiny", "--backend", "random", "--batch", "2", "--seed", "2"]) == 1
    assert "FAIL" in capsys.readouterr().out


def test_bad_batch_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "--preset", "tiny", "--backend", "numpy", "--batch", "0"]) == 2
    assert "--batch" in capsys.readouterr().err
