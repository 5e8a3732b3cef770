"""lc0py.chess: python-chess positions → lc0's 112 input planes; the 1858-entry policy index.

* :class:`PositionHistory` (``history.py``): the game as lc0 sees it (ep marker, rule 50,
  repetitions) and ``encode(input_format)``;
* :class:`EncodedPosition`, :func:`encode_batch` (``encoding.py``): planes → backend batches,
  :class:`PlanesBatch` (``planes.py``);
* ``policy.py``: ``POLICY_MOVES``, ``move_to_index``, ``legal_moves_with_indices``,
  ``index_to_move``, ``ATTENTION_POLICY_MAP``;
* ``transforms.py``: the canonical board symmetries (FLIP, MIRROR, TRANSPOSE).

Spec: ``docs/input-encoding.md``.
"""

from lc0py.chess.encoding import EncodedPosition, encode_batch
from lc0py.chess.history import PositionHistory
from lc0py.chess.planes import PlanesBatch
from lc0py.chess.policy import (
    ATTENTION_POLICY_MAP,
    POLICY_MOVES,
    index_to_move,
    legal_moves_with_indices,
    move_to_index,
)
from lc0py.chess.transforms import FLIP, MIRROR, TRANSPOSE

__all__ = [
    "ATTENTION_POLICY_MAP",
    "FLIP",
    "MIRROR",
    "POLICY_MOVES",
    "TRANSPOSE",
    "EncodedPosition",
    "PlanesBatch",
    "PositionHistory",
    "encode_batch",
    "index_to_move",
    "legal_moves_with_indices",
    "move_to_index",
]
