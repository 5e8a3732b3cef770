"""Write a network (either body) as an lc0 weights file that lc0 itself loads (docs/weights-format.md §10).

``network_to_proto`` builds the ``pblczero.Net``: magic 0x1c0, ``min_version`` 0.30.0 for LINEAR16
(0.33.0 when layers use FLOAT16/BFLOAT16/FLOAT32, which older lc0 would mis-decode),
``weights_encoding = LINEAR16`` while min_version < 0.33, every ``NetworkFormat`` field explicit
(activations resolved, never DEFAULT), ``headcount`` and ``dims`` filled. Format 7 nets get
``policy_heads``/``value_heads`` containers with all heads in ``network.extra``. Each body has
its writer (``attention_writer.py``, ``residual_writer.py``, on ``layer_writer.py``'s shared parts).

``save_network`` serialises it deterministically (gzip with mtime 0 and no file name) and writes
atomically through ``lc0py.storage.atomic.write_atomically`` (mkstemp in the target folder, then
``os.replace``); on failure nothing is left behind.
"""

from __future__ import annotations

import gzip
import os
from collections.abc import Callable
from typing import Any

from lc0py.errors import UsageError
from lc0py.storage.atomic import write_atomically
from lc0py.weights.attention_writer import attention_to_proto
from lc0py.weights.decode import ENCODING_NAMES
from lc0py.weights.layer_writer import LayerWriter
from lc0py.weights.network import BodyKind, Network, WeightsEncoding
from lc0py.weights.residual import ResidualNetwork
from lc0py.weights.residual_writer import residual_to_proto


def _encoding(encoding: str | WeightsEncoding) -> WeightsEncoding:
    if isinstance(encoding, WeightsEncoding):
        if encoding == WeightsEncoding.UNKNOWN:
            raise UsageError("encoding UNKNOWN cannot be written")
        return encoding
    key = str(encoding).lower()
    if key not in ENCODING_NAMES:
        raise UsageError(f"encoding '{encoding}': unknown (available: {', '.join(ENCODING_NAMES)})")
    return ENCODING_NAMES[key]


#: Each body's writer ``(network, layer writer, encoding) -> pblczero.Net``: the one place the
#: weights package writes per body (``loader.py`` reads, ``presets.py`` generates by the same key).
_WRITERS: dict[BodyKind, Callable[[Any, LayerWriter, WeightsEncoding], Any]] = {
    "attention": attention_to_proto,
    "residual": residual_to_proto,
}


def network_to_proto(network: Network | ResidualNetwork, encoding: str | WeightsEncoding = "linear16") -> Any:
    """The ``pblczero.Net`` message for ``network`` with every layer in ``encoding``."""
    enc = _encoding(encoding)
    return _WRITERS[network.body](network, LayerWriter(enc), enc)


#: Payloads above this size are gzip-"stored" (level 0) unless a level is given: random weights
#: compress by only ~3% while deflating a 190 MB T82 costs ~5 s of CPU (and gunzip ~1.5 s).
STORE_ABOVE_BYTES = 32 * 1024 * 1024


def serialize_network(network: Network | ResidualNetwork, encoding: str | WeightsEncoding = "linear16",
                      gzip_output: bool = True, compresslevel: int | None = None) -> bytes:
    """The file bytes: serialised ``Net``, gzip-compressed with mtime 0 and no name (deterministic).

    ``compresslevel=None`` picks 6, or 0 (stored, still a valid gzip stream) for payloads above
    ``STORE_ABOVE_BYTES``; the choice depends only on the data, so output stays deterministic.
    """
    data = network_to_proto(network, encoding).SerializeToString(deterministic=True)
    if gzip_output:
        level = compresslevel if compresslevel is not None else (0 if len(data) > STORE_ABOVE_BYTES else 6)
        data = gzip.compress(data, compresslevel=level, mtime=0)
    return data


def save_network(
    network: Network | ResidualNetwork,
    path: str | os.PathLike[str],
    encoding: str | WeightsEncoding = "linear16",
    gzip: bool = True,
    compresslevel: int | None = None,
    force: bool = False,
) -> int:
    """Write ``network`` to ``path`` atomically; return the number of bytes written.

    ``gzip=False`` writes the plain protobuf (lc0 loads both); ``compresslevel`` as in
    ``serialize_network``. Written by ``lc0py.storage.atomic.write_atomically`` (refuses a
    directory, device or - unless ``force`` - symlink; keeps an existing file's mode). Raises
    ``UsageError`` (unknown encoding, unwritable path); nothing is created on failure.
    """
    name = os.fspath(path)
    data = serialize_network(network, encoding, gzip, compresslevel)
    write_atomically(name, data, force=force)
    return len(data)
