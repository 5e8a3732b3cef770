"""Named network shapes and a deterministic random-weight generator for either body.

``PRESETS`` holds the shapes as data: ``Preset`` (attention bodies, ``attention_random.py``) and
``ResidualPreset`` (residual bodies, ``residual_random.py``). ``random_network(preset, seed,
**overrides)`` turns one into a network whose weights are drawn from a single
``numpy.random.default_rng(seed)`` stream in a fixed order, so the same arguments always give the
same arrays (and, through the writer, the same file bytes).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from lc0py.errors import UsageError
from lc0py.weights.attention_random import (
    ACTIVATIONS,
    EMBEDDINGS,
    POLICY_HEAD_NAMES,
    VALUE_HEAD_NAMES,
    Preset,
    random_attention_network,
)
from lc0py.weights.generation import DEFAULT_ACTIVATIONS
from lc0py.weights.network import BodyKind, InputFormat, Network
from lc0py.weights.residual import ResidualNetwork
from lc0py.weights.residual_random import RESIDUAL_POLICIES, ResidualPreset, random_residual_network

_T82 = Preset(embedding_size=768, layers=15, heads=24, ffn_size=1024)

PRESETS: dict[str, Preset | ResidualPreset] = {
    "t82": _T82,
    "t82-h12": dataclasses.replace(_T82, heads=12),
    "t82-h8": dataclasses.replace(_T82, heads=8),
    "t82-h6": dataclasses.replace(_T82, heads=6),
    "tiny": Preset(
        embedding_size=64, layers=2, heads=4, ffn_size=96,
        smolgen_channels=4, smolgen_hidden=16, smolgen_gen=16,
        policy_embedding=32, policy_dmodel=32, value_channels=8, value_hidden=32,
        moves_left_channels=4, moves_left_hidden=16, dense_embedding_size=4, embedding_ffn_size=64,
    ),
    # residual (convolutional) bodies
    "res-tiny": ResidualPreset(blocks=2, filters=16, se_hidden=4, value_channels=4, value_hidden=16,
                               moves_left_channels=2, moves_left_hidden=8),
    # a T40-era shape: 20x256 SE, convolution policy, WDL, moves-left
    "res-20x256": ResidualPreset(blocks=20, filters=256, se_hidden=32, input_format=1),
    # T78-like: 40x512 SE body, attention policy (SELU embedding), mish, canonical hectoplies input
    "t78": ResidualPreset(blocks=40, filters=512, se_hidden=64, policy="attention", policy_embedding=512,
                          policy_dmodel=512, input_format=int(InputFormat.WITH_CANONICALIZATION_HECTOPLIES)),
}

def preset_config(preset: str = "tiny", **overrides: Any) -> Any:
    """The named preset (``Preset`` or ``ResidualPreset``) with ``overrides`` (its field names)
    applied and validated."""
    if preset not in PRESETS:
        raise UsageError(f"preset '{preset}': unknown (available: {', '.join(PRESETS)})")
    fields = [f.name for f in dataclasses.fields(PRESETS[preset])]
    unknown = sorted(set(overrides) - set(fields))
    if unknown:
        raise UsageError(f"unknown network setting(s) for preset {preset}: {', '.join(unknown)} "
                         f"(available: {', '.join(fields)})")
    clean = {k: v for k, v in overrides.items() if v is not None}
    for key in ("embedding", "default_activation", "ffn_activation", "smolgen_activation", "policy"):
        if key in clean:
            clean[key] = str(clean[key]).lower().replace("-", "_")
    if "policy_heads" in clean:
        clean["policy_heads"] = tuple(clean["policy_heads"])
    if "value_heads" in clean:
        clean["value_heads"] = tuple(clean["value_heads"])
    return dataclasses.replace(PRESETS[preset], **clean).validated()


#: Each body's generator ``(shape, seed, preset name) -> network``: the one place the weights
#: package generates per body (``loader.py`` reads, ``writer.py`` writes by the same key).
_GENERATORS: dict[BodyKind, Callable[[Any, int, str], Network | ResidualNetwork]] = {
    "attention": random_attention_network,
    "residual": random_residual_network,
}


def random_network(preset: str = "tiny", seed: int = 0, **overrides: Any) -> Network:
    """A deterministic random-weight network of the named preset shape.

    ``overrides`` are ``Preset`` fields, e.g. ``heads=12, layers=1, embedding="pe_dense",
    smolgen=False, moves_left=False, gating=False, default_activation="relu",
    ffn_activation="mish", smolgen_activation="swish", input_format=3, multihead=True, wdl=False``
    (``ResidualPreset`` fields for residual presets). Raises ``UsageError`` for an unknown preset
    or setting.
    """
    c = preset_config(preset, **overrides)
    return _GENERATORS[c.body](c, seed, preset)  # type: ignore[return-value]


__all__ = [
    "ACTIVATIONS", "DEFAULT_ACTIVATIONS", "EMBEDDINGS", "POLICY_HEAD_NAMES", "PRESETS", "RESIDUAL_POLICIES",
    "VALUE_HEAD_NAMES", "Preset", "ResidualPreset", "preset_config", "random_network",
]
