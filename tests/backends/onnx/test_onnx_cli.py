"""``lc0py export-onnx``: a usable model on success; one line, exit 2, no file on any failure."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("onnx", reason="onnx not installed (pip install 'lc0py[onnx]')")
pytest.importorskip("onnxruntime", reason="onnxruntime not installed (pip install 'lc0py[onnx]')")

import onnx  # noqa: E402

from lc0py.cli.main import main  # noqa: E402
from lc0py.storage.atomic import _umask  # noqa: E402
from lc0py.weights import load_network, random_network, save_network  # noqa: E402
from tests.backends.onnx.onnx_testutil import (  # noqa: E402
    assert_close,
    errors,
    random_batch,
    reference,
    run_onnx,
)


@pytest.fixture(scope="module")
def weights(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("nets") / "tiny.pb.gz"
    save_network(random_network("tiny", seed=51), path)
    return path


def _one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("lc0py: ") and "\n" not in err, err
    return err


def _export_refused(capsys: pytest.CaptureFixture[str], weights: Path, out: Path, *flags: str) -> str:
    """``export-onnx`` of ``weights`` to ``out`` exits 2; its one-line error."""
    assert main(["export-onnx", "--weights", str(weights), "-o", str(out), *flags]) == 2
    return _one_line_error(capsys)


@pytest.mark.parametrize(
    "flags, fp16",
    [
        ([], False),
        (["--fp16"], True),
        (["--batch-size", "3", "--attention", "contrib"], False),
        (["--batch-size", "dynamic", "--opset", "18"], False),
    ],
    ids=["default", "fp16", "batch3-contrib", "dynamic-opset18"],
)
def test_export_matches_reference(
    weights: Path, tmp_path: Path, flags: list[str], fp16: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "net.onnx"
    assert main(["export-onnx", "--weights", str(weights), "-o", str(out), *flags]) == 0
    assert "wrote" in capsys.readouterr().out
    model = onnx.load(str(out))
    onnx.checker.check_model(model, full_check=True)
    assert [p.name for p in tmp_path.iterdir()] == ["net.onnx"]  # no temporary file left
    assert out.stat().st_mode & 0o777 == 0o666 & ~_umask()  # not mkstemp's 0600
    network = load_network(weights)  # what was written, as the exporter saw it
    batch = random_batch(seed=61, size=3)
    assert_close(errors(run_onnx(model, batch, fp16), reference(network, batch)), "fp16" if fp16 else "fp32")


def test_unwritable_directory(weights: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "missing" / "net.onnx"
    assert "cannot write there" in _export_refused(capsys, weights, out)
    assert not out.parent.exists()


def test_output_is_a_directory(weights: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "is a directory" in _export_refused(capsys, weights, tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_corrupt_weights(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.pb.gz"
    bad.write_bytes(b"\x1f\x8b\x08\x00 definitely not a network")
    out = tmp_path / "net.onnx"
    _export_refused(capsys, bad, out)
    assert not out.exists()


def test_failure_while_writing_leaves_nothing(
    weights: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def fail(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    out = tmp_path / "net.onnx"
    assert "No space left on device" in _export_refused(capsys, weights, out)
    assert list(tmp_path.iterdir()) == []


def test_existing_file_is_kept_on_failure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "net.onnx"
    out.write_bytes(b"previous model")
    _export_refused(capsys, tmp_path / "nope.pb.gz", out)
    assert out.read_bytes() == b"previous model"


@pytest.mark.parametrize(
    "flags",
    [["--batch-size", "0"], ["--batch-size", "many"], ["--attention", "flash"], ["--opset", "x"]],
    ids=["batch0", "batch-word", "attention", "opset-word"],
)
def test_bad_flags_exit_2(weights: Path, tmp_path: Path, flags: list[str]) -> None:
    with pytest.raises(SystemExit) as info:  # argparse's own usage errors
        main(["export-onnx", "--weights", str(weights), "-o", str(tmp_path / "n.onnx"), *flags])
    assert info.value.code == 2
    assert list(tmp_path.iterdir()) == []


def test_old_opset(weights: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "opset 17" in _export_refused(capsys, weights, tmp_path / "n.onnx", "--opset", "13")


def test_unknown_policy_head(weights: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "n.onnx"
    _export_refused(capsys, weights, out, "--policy-head", "soft")
    assert not out.exists()


def _run_cli(args: list[str], block: str | None = None) -> subprocess.CompletedProcess[str]:
    prelude = f"import sys; sys.modules[{block!r}] = None; " if block else "import sys; "
    code = prelude + f"from lc0py.cli.main import main; sys.exit(main({args!r}))"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)


def test_missing_onnx_package(weights: Path, tmp_path: Path) -> None:
    out = tmp_path / "n.onnx"
    proc = _run_cli(["export-onnx", "--weights", str(weights), "-o", str(out)], block="onnx")
    assert proc.returncode == 2
    assert proc.stderr.strip() == "lc0py: the onnx package is not installed (pip install 'lc0py[onnx]')"
    assert not out.exists()


def test_missing_provider_through_a_command(weights: Path) -> None:
    """A backend whose provider is absent: one line naming it, exit 2 (here through eval)."""
    import onnxruntime

    if "CUDAExecutionProvider" in onnxruntime.get_available_providers():
        pytest.skip("CUDA provider present")
    proc = _run_cli(["eval", "--weights", str(weights), "--backend", "onnx-cuda"])
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "CUDAExecutionProvider" in lines[0], proc.stderr


def test_head_selection(tmp_path: Path) -> None:
    """--policy-head/--value-head export the chosen heads of a multi-head net (lc0's leela2onnx flags)."""
    path = tmp_path / "mh.pb.gz"
    save_network(random_network("tiny", seed=52, multihead=True), path)
    out = tmp_path / "mh.onnx"
    flags = ["--policy-head", "optimistic", "--value-head", "q"]
    assert main(["export-onnx", "--weights", str(path), "-o", str(out), *flags]) == 0
    batch = random_batch(seed=62, size=3)
    got = run_onnx(onnx.load(str(out)), batch, False)
    chosen = reference(load_network(path, policy_head="optimistic", value_head="q"), batch)
    assert_close(errors(got, chosen), "fp32")
    vanilla = reference(load_network(path), batch)
    assert errors(got, vanilla)["policy"] > 1e-2  # really another head
