"""``lc0py make-net`` through the CLI entry point: files, determinism, one-line errors."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from lc0py.cli.main import main
from lc0py.weights import load_network, load_proto
from lc0py.weights.network import InputEmbedding, NetworkKind


def _one_line_error(capsys: pytest.CaptureFixture[str], rc: int) -> str:
    err = capsys.readouterr().err
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def test_writes_a_loadable_net(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "n.pb.gz"
    assert (
        main(
            [
                "make-net",
                "--preset",
                "tiny",
                "--seed",
                "7",
                "--heads",
                "8",
                "--layers",
                "1",
                "--embedding",
                "pe_dense",
                "--no-smolgen",
                "--no-moves-left",
                "--input-format",
                "3",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    assert "wrote" in capsys.readouterr().out
    net = load_network(out)
    assert (net.heads, net.num_layers, net.embedding.kind) == (8, 1, InputEmbedding.PE_DENSE)
    assert net.smolgen_w is None and net.moves_left is None and net.format.input == 3


def test_pe_dense_sizes(tmp_path: Path) -> None:
    out = tmp_path / "d.pb.gz"
    argv = [
        "make-net",
        "--layers",
        "1",
        "--embedding",
        "pe_dense",
        "--dense-embedding-size",
        "6",
        "--embedding-ffn-size",
        "40",
        "-o",
        str(out),
    ]
    assert main(argv) == 0
    emb = load_network(out).embedding
    assert emb.preproc is not None and emb.preproc.w.shape == (64 * 6, 768)
    assert emb.dense.n_in == 112 + 6
    assert emb.ffn1 is not None and emb.ffn1.w.shape == (40, 64)


def test_same_seed_same_bytes(tmp_path: Path) -> None:
    paths = [tmp_path / f"{i}.pb.gz" for i in range(3)]
    for path, seed in zip(paths, ("5", "5", "6"), strict=True):
        assert main(["make-net", "--seed", seed, "--layers", "1", "-o", str(path)]) == 0
    assert paths[0].read_bytes() == paths[1].read_bytes() != paths[2].read_bytes()


@pytest.mark.parametrize("encoding, code", [("float16", 2), ("bfloat16", 3), ("float32", 4)])
def test_encodings(tmp_path: Path, encoding: str, code: int) -> None:
    out = tmp_path / "n.pb.gz"
    assert main(["make-net", "--layers", "1", "--encoding", encoding, "-o", str(out)]) == 0
    msg = load_proto(out)
    assert msg.weights.encoder[0].mha.q_w.encoding == code
    assert (msg.min_version.major, msg.min_version.minor) == (0, 33)


def test_multihead_and_plain(tmp_path: Path) -> None:
    out = tmp_path / "n.pb"
    assert main(["make-net", "--multihead", "--layers", "1", "--no-gzip", "-o", str(out)]) == 0
    assert out.read_bytes()[:1] == b"\x0d"
    net = load_network(out, policy_head="optimistic", value_head="q")
    assert net.format.network == NetworkKind.ATTENTIONBODY_WITH_MULTIHEADFORMAT


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--preset", "t99"], "preset 't99': unknown (available: t82, t82-h12, t82-h8, t82-h6, tiny)"),
        (
            ["--encoding", "int4"],
            "encoding 'int4': unknown (available: linear16, float16, bfloat16, float32)",
        ),
        (["--heads", "7"], "heads (7) must divide the embedding size (64)"),
        (["--embedding", "sparse"], "embedding 'sparse': unknown (available: pe_map, pe_dense, none)"),
    ],
)
def test_bad_arguments(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    out = tmp_path / "n.pb.gz"
    line = _one_line_error(capsys, main(["make-net", *argv, "-o", str(out)]))
    assert line == f"lc0py: {message}"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("target", ["missing-dir/n.pb.gz", "."])
def test_unwritable_output(tmp_path: Path, capsys: pytest.CaptureFixture[str], target: str) -> None:
    before = sorted(tmp_path.iterdir())
    line = _one_line_error(capsys, main(["make-net", "-o", str(tmp_path / target)]))
    assert line.startswith("lc0py: cannot write")
    assert sorted(tmp_path.iterdir()) == before


def test_gzip_header_has_no_name_or_time(tmp_path: Path) -> None:
    out = tmp_path / "n.pb.gz"
    assert main(["make-net", "--layers", "1", "-o", str(out)]) == 0
    data = out.read_bytes()
    assert data[3] & 0x08 == 0  # FNAME flag clear
    assert data[4:8] == bytes(4)  # MTIME 0
    assert gzip.decompress(data)[:5] == bytes([0x0D, 0xC0, 0x01, 0x00, 0x00])
