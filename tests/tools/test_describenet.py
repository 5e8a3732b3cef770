"""``lc0py describenet``: lc0's layout, decoded sizes, parameter/FLOP lines, one-line errors."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from lc0py.cli.main import main
from lc0py.weights import network_to_proto, random_network, save_network

ROOT = Path(__file__).resolve().parents[2]


def _describe(path: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    assert main(["describenet", "--weights", str(path)]) == 0
    return capsys.readouterr().out.splitlines()


def _pairs(lines: list[str]) -> dict[str, str]:
    out = {}
    for line in lines:
        if ": " in line and line[:28].strip():
            assert line[28:30] == ": ", line  # key right-aligned in 28 characters
            out[line[:28].strip()] = line[30:]
    return out


def test_layout_and_values(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = _describe(ROOT / "weights" / "tiny-seed1.pb.gz", capsys)
    assert lines[:4] == ["", "General", "~~~~~~~", "         Minimal Lc0 version: v0.30.0"]
    for title in ("Format", "Weights"):
        i = lines.index(title)
        assert lines[i - 1] == "" and lines[i + 1] == "~" * len(title)
    kv = _pairs(lines)
    assert kv["Weights encoding"] == "LINEAR16"
    assert kv["Network"] == "NETWORK_ATTENTIONBODY_WITH_HEADFORMAT"
    assert kv["Input"] == "INPUT_112_WITH_CANONICALIZATION_HECTOPLIES"
    assert kv["FFN activation"] == "ACTIVATION_RELU_2"
    assert kv["Input embedding"] == "INPUT_EMBEDDING_PE_MAP"
    assert (kv["Encoders"], kv["Encoder heads"], kv["Embedding size"], kv["Dmodel"], kv["Encoder DFF"]) == (
        "2",
        "4",
        "64",
        "64",
        "96",
    )
    assert (kv["Policy"], kv["Policy Dmodel"], kv["Value"], kv["MLH"]) == (
        "Attention",
        "32",
        "WDL",
        "Present",
    )
    net = random_network("tiny", seed=1)
    assert kv["Parameters"].split()[0] == str(net.parameter_count())
    assert kv["FLOPs per position"].split()[0] == str(net.flops_per_position())


def test_float32_sizes_are_element_counts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "f32.pb.gz"
    save_network(
        random_network("tiny", layers=1, multihead=True, moves_left=False, wdl=False),
        path,
        encoding="float32",
    )
    kv = _pairs(_describe(path, capsys))
    assert kv["Minimal Lc0 version"] == "v0.33.0"
    assert "Weights encoding" not in kv
    assert (kv["Embedding size"], kv["Policy Dmodel"], kv["Value"], kv["MLH"]) == (
        "64",
        "32",
        "Classical",
        "Absent",
    )


def test_training_params_and_unsupported_net(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    msg = network_to_proto(random_network("tiny", layers=1))
    msg.training_params.training_steps = 1200
    msg.training_params.learning_rate = 0.25
    msg.training_params.lc0_params = "--foo"
    msg.format.network_format.policy = 2  # conv policy: lc0py refuses to run it but still describes it
    path = tmp_path / "tp.pb.gz"
    path.write_bytes(gzip.compress(msg.SerializeToString()))
    lines = _describe(path, capsys)
    assert "Training Parameters" in lines
    kv = _pairs(lines)
    assert (kv["Training steps"], kv["Learning rate"], kv["Lc0 Params"]) == ("1200", "0.25", "--foo")
    assert kv["Policy"] == "Dense" and "FLOPs per position" not in kv
    assert int(kv["Parameters"].split()[0]) > 100_000


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "no such weights file"),
        (b"\x1f\x8b\x08\x00\x00\x00\x00\x00", "truncated gzip data"),
        (b"\x0d\xc1\x01\x00\x00", "bad header"),
        (b"\x0dgarbage", "not an lc0 network file"),
    ],
)
def test_bad_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes | None, message: str
) -> None:
    path = tmp_path / "bad.pb.gz"
    if content is not None:
        path.write_bytes(content)
    rc = main(["describenet", "--weights", str(path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and message in err[0] and err[0].startswith("lc0py: ")


def _lc0_describenet(path: Path) -> list[str] | None:
    """lc0's own ``describenet`` output (the lc0 binary installed beside this Python), or None."""
    import subprocess
    import sys

    lc0 = Path(sys.executable).parent / "lc0"
    if not lc0.is_file():
        return None
    run = subprocess.run([str(lc0), "describenet", "-w", str(path)], capture_output=True, text=True,
                         timeout=120)
    return run.stdout.splitlines() if run.returncode == 0 else None


@pytest.mark.parametrize("overrides", [
    {},
    dict(policy="classical", policy_channels=8, wdl=False, se=False),
    dict(policy="attention", policy_encoders=1, policy_encoder_heads=2, moves_left=False),
], ids=["conv", "classical", "attention"])
def test_residual_net_as_lc0_prints_it(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       overrides: dict[str, object]) -> None:
    net = random_network("res-tiny", seed=2, **overrides)
    path = tmp_path / "res.pb.gz"
    save_network(net, path)
    lines = _describe(path, capsys)
    kv = _pairs(lines)
    assert (kv["Blocks"], kv["Filters"]) == ("2", "16")
    assert kv["Parameters"].split()[0] == str(net.parameter_count())
    assert kv["FLOPs per position"].split()[0] == str(net.flops_per_position())
    theirs = _lc0_describenet(path)
    if theirs is None:
        pytest.skip("lc0 binary not installed beside this Python")
    ours = [ln for ln in lines if not ln.lstrip().startswith(("Parameters:", "FLOPs per position:"))]
    assert ours == theirs
