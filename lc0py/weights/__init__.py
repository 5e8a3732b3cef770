"""lc0 weights files: schema, decoding, loading, writing and random test networks.

Public API:
  * ``load_network(path, policy_head="vanilla", value_head="winner") -> Network | ResidualNetwork``
  * ``load_proto(path)`` -> the checked, normalised raw ``pblczero.Net`` message
  * ``save_network(network, path, encoding="linear16", gzip=True)`` / ``network_to_proto``
  * ``random_network(preset="tiny", seed=0, **overrides)`` and ``PRESETS`` (attention and residual)
  * the typed descriptions, both behind ``BaseNetwork`` (``network.body`` names the body):
    ``Network`` and friends in ``lc0py.weights.network`` (attention bodies), ``ResidualNetwork``
    and friends in ``lc0py.weights.residual`` (SE-ResNet bodies)

Modules (call chain ``load_network -> load_proto -> proto.parse_net -> normalize -> decode``;
one module per body for reading, writing and generating, on shared modules, README.md):
  * ``network.py``   ``BaseNetwork`` and the typed, validated attention ``Network``
  * ``residual.py``  the typed ``ResidualNetwork``
  * ``proto.py``     lc0's ``pblczero.Net`` schema, descriptors built at run time from one table
  * ``decode.py``    ``Layer`` bytes <-> float32 arrays (LINEAR16, FLOAT16, BFLOAT16, FLOAT32)
  * ``normalize.py`` lc0's ``FixOlderWeightsFile`` rules
  * ``loader.py``    container checks, refusals, the body readers' table; ``reader.py`` and
    ``heads.py`` shared, ``attention_reader.py`` / ``residual_reader.py`` per body
  * ``writer.py``    network -> ``Net`` -> deterministic, atomically written ``.pb.gz``;
    ``layer_writer.py`` shared, ``attention_writer.py`` / ``residual_writer.py`` per body
  * ``presets.py``   named shapes (t82, t82-h12/h8/h6, tiny, res-tiny, res-20x256, t78) and
    ``random_network``; ``generation.py`` shared, ``attention_random.py`` / ``residual_random.py``
"""

from __future__ import annotations

from lc0py.weights.loader import load_network, load_proto, network_from_proto
from lc0py.weights.network import BaseNetwork, BodyKind, Network
from lc0py.weights.presets import PRESETS, Preset, ResidualPreset, preset_config, random_network
from lc0py.weights.residual import ResidualNetwork
from lc0py.weights.writer import network_to_proto, save_network, serialize_network

__all__ = [
    "BaseNetwork", "BodyKind", "Network", "PRESETS", "Preset", "ResidualNetwork", "ResidualPreset",
    "load_network", "load_proto", "network_from_proto", "network_to_proto", "preset_config",
    "random_network", "save_network", "serialize_network",
]
