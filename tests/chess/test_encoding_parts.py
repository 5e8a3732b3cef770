"""The search's batch encoding (``encode_history_parts`` + ``parts_batch``: blocks joined once
per batch) must give exactly the planes of ``encode_history`` + ``encode_batch``."""

from __future__ import annotations

import numpy as np
import pytest

from lc0py.chess.encoding import (
    SUPPORTED_FORMATS,
    encode_batch,
    encode_history,
    encode_history_parts,
    parts_batch,
)
from lc0py.chess.history import PositionHistory
from lc0py.chess.testing import oracle_positions


@pytest.mark.parametrize("fill", ["no", "fen_only", "always"])
@pytest.mark.parametrize("input_format", SUPPORTED_FORMATS)
def test_masks_batch_equals_encode_batch(input_format: int, fill: str) -> None:
    masks, aux, rule50, encoded = [], [], [], []
    for case in oracle_positions(seed=1, count=120):
        history = PositionHistory.from_fen(case.fen, case.moves, chess960=case.chess960)
        records = history.records
        b, a, r, t = encode_history_parts(records, input_format, fill)
        enc = encode_history(records, input_format, fill)
        assert t == enc.transform
        masks += b
        aux.append(a)
        rule50.append(r)
        encoded.append(enc)
    got, want = parts_batch(masks, aux, rule50), encode_batch(encoded)
    assert got.masks.dtype == np.uint64 and got.values.dtype == np.float32
    np.testing.assert_array_equal(got.masks, want.masks)
    np.testing.assert_array_equal(got.values, want.values)


def test_empty_batch() -> None:
    got = parts_batch([], [], [])
    assert got.masks.shape == (0, 112) and got.values.shape == (0, 112)
