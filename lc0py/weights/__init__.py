"""lc0 weights files: schema, decoding, loading, writing and random test networks.

Public API:
  * ``load_network(path, policy_head="vanilla", value_head="winner") -> Network``
  * ``load_proto(path)`` -> the checked, normalised raw ``pblczero.Net`` message
  * ``save_network(network, path, encoding="linear16", gzip=True)`` / ``network_to_proto``
  * ``random_network(preset="tiny", seed=0, **overrides) -> Network`` and ``PRESETS``
  * the typed description itself: ``Network`` and friends in ``lc0py.weights.network``

Modules (call chain ``load_network -> load_proto -> proto.parse_net -> normalize -> decode``):
  * ``network.py``   the typed, validated ``Network`` every backend consumes
  * ``proto.py``     lc0's ``pblczero.Net`` schema, descriptors built at run time from one table
  * ``decode.py``    ``Layer`` bytes <-> float32 arrays (LINEAR16, FLOAT16, BFLOAT16, FLOAT32)
  * ``normalize.py`` lc0's ``FixOlderWeightsFile`` rules
  * ``loader.py``    container checks, refusals, head selection, size validation -> ``Network``
  * ``writer.py``    ``Network`` -> ``Net`` -> deterministic, atomically written ``.pb.gz``
  * ``presets.py``   named shapes (t82, t82-h12/h8/h6, tiny) and ``random_network``
"""

from __future__ import annotations

from lc0py.weights.loader import load_network, load_proto, network_from_proto
from lc0py.weights.network import Network
from lc0py.weights.presets import PRESETS, Preset, preset_config, random_network
from lc0py.weights.writer import network_to_proto, save_network, serialize_network

__all__ = [
    "Network",
    "PRESETS",
    "Preset",
    "load_network",
    "load_proto",
    "network_from_proto",
    "network_to_proto",
    "preset_config",
    "random_network",
    "save_network",
    "serialize_network",
]
