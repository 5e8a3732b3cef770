"""Named network shapes and a deterministic random-weight generator.

``PRESETS`` holds the shapes as data (``Preset``); ``random_network(preset, seed, **overrides)``
turns one into a ``Network`` whose weights are drawn from a single ``numpy.random.default_rng(seed)``
stream in a fixed order, so the same arguments always give the same arrays (and, through the
writer, the same file bytes).

Scaling: dense weights are ``N(0, gain²/fan_in)``, LayerNorm gammas ``1 + N(0, 0.1²)``, betas and
biases small. This keeps every activation O(1) (each encoder sublayer ends in a LayerNorm), so fp16
inference stays finite, while the policy Q/K projections get a gain that makes the logits' standard
deviation about 1-3 and the WDL head stays away from saturation: outputs differ clearly between
positions, which is what tests of backends need.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from lc0py.errors import UsageError
from lc0py.weights.network import (
    Activation,
    DefaultActivation,
    Dense,
    Embedding,
    EncoderLayer,
    InputEmbedding,
    InputFormat,
    LayerNorm,
    MovesLeftFormat,
    MovesLeftHead,
    Network,
    NetworkFormat,
    NetworkKind,
    OutputFormat,
    PolicyFormat,
    PolicyHead,
    Smolgen,
    ValueFormat,
    ValueHead,
)

EMBEDDINGS = {
    "pe_map": InputEmbedding.PE_MAP, "pe_dense": InputEmbedding.PE_DENSE, "none": InputEmbedding.NONE,
}
#: Activation names accepted for ``ffn_activation``/``smolgen_activation`` overrides.
ACTIVATIONS = {a.name.lower(): a for a in Activation if a != Activation.SOFTMAX}
DEFAULT_ACTIVATIONS = {"relu": DefaultActivation.RELU, "mish": DefaultActivation.MISH}
POLICY_HEAD_NAMES = ("vanilla", "optimistic", "soft", "opponent")
VALUE_HEAD_NAMES = ("winner", "q", "st")


@dataclass(frozen=True)
class Preset:
    """The shape and format of a generated network (docs/attention-body.md §1 symbols in comments)."""

    embedding_size: int  # E (= D, the attention width)
    layers: int  # L
    heads: int  # H
    ffn_size: int  # Fd
    smolgen: bool = True
    smolgen_channels: int = 32  # hc
    smolgen_hidden: int = 256  # hs
    smolgen_gen: int = 256  # gs
    policy_embedding: int = 768  # Pe
    policy_dmodel: int = 768  # Pd
    value_channels: int = 32  # Vc
    value_hidden: int = 128
    moves_left: bool = True
    moves_left_channels: int = 8  # Mc
    moves_left_hidden: int = 128  # Mh
    embedding: str = "pe_map"  # pe_map | pe_dense | none
    dense_embedding_size: int = 32  # dE (PE_DENSE)
    embedding_ffn_size: int = 1024  # Fe (PE_DENSE)
    gating: bool = True
    default_activation: str = "mish"  # relu | mish
    ffn_activation: str = "relu_2"
    smolgen_activation: str = "swish"
    input_format: int = int(InputFormat.WITH_CANONICALIZATION_HECTOPLIES)
    wdl: bool = True
    multihead: bool = False
    policy_heads: tuple[str, ...] = ("vanilla", "optimistic")  # used when multihead
    value_heads: tuple[str, ...] = ("winner", "q")  # used when multihead

    def validated(self) -> Preset:
        """Return self, or raise ``UsageError`` naming the first inconsistent setting."""
        positive = ("embedding_size", "layers", "heads", "ffn_size", "policy_embedding", "policy_dmodel",
                    "value_channels", "value_hidden", "moves_left_channels", "moves_left_hidden",
                    "smolgen_channels", "smolgen_hidden", "smolgen_gen", "dense_embedding_size",
                    "embedding_ffn_size")
        for name in positive:
            if int(getattr(self, name)) <= 0:
                raise UsageError(f"{name} must be positive (got {getattr(self, name)})")
        if self.embedding_size % self.heads:
            raise UsageError(f"heads ({self.heads}) must divide the embedding size ({self.embedding_size})")
        if self.embedding not in EMBEDDINGS:
            raise UsageError(f"embedding '{self.embedding}': unknown (available: {', '.join(EMBEDDINGS)})")
        if self.default_activation not in DEFAULT_ACTIVATIONS:
            raise UsageError(
                f"default activation '{self.default_activation}': unknown (available: relu, mish)")
        for what in ("ffn_activation", "smolgen_activation"):
            if getattr(self, what) not in ACTIVATIONS:
                raise UsageError(
                    f"{what} '{getattr(self, what)}': unknown (available: {', '.join(ACTIVATIONS)})")
        try:
            InputFormat(self.input_format)
        except ValueError:
            valid = ", ".join(str(int(f)) for f in InputFormat if f != InputFormat.UNKNOWN)
            raise UsageError(f"input format {self.input_format}: unknown (available: {valid})") from None
        if self.input_format == InputFormat.UNKNOWN:
            raise UsageError("input format 0 (INPUT_UNKNOWN) cannot be evaluated")
        if self.multihead:
            if "vanilla" not in self.policy_heads or "winner" not in self.value_heads:
                raise UsageError("a multi-head net needs a 'vanilla' policy head and a 'winner' value head")
            bad = [h for h in self.policy_heads if h not in POLICY_HEAD_NAMES]
            bad += [h for h in self.value_heads if h not in VALUE_HEAD_NAMES]
            if bad:
                raise UsageError(f"unknown head name(s) {', '.join(bad)} "
                                 f"(policy: {', '.join(POLICY_HEAD_NAMES)}; "
                                 f"value: {', '.join(VALUE_HEAD_NAMES)})")
        return self


_T82 = Preset(embedding_size=768, layers=15, heads=24, ffn_size=1024)

PRESETS: dict[str, Preset] = {
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
}

_OVERRIDE_TYPES = {f.name: f.type for f in dataclasses.fields(Preset)}


def preset_config(preset: str = "tiny", **overrides: Any) -> Preset:
    """The named preset with ``overrides`` (``Preset`` field names) applied and validated."""
    if preset not in PRESETS:
        raise UsageError(f"preset '{preset}': unknown (available: {', '.join(PRESETS)})")
    unknown = sorted(set(overrides) - set(_OVERRIDE_TYPES))
    if unknown:
        raise UsageError(f"unknown network setting(s): {', '.join(unknown)} "
                         f"(available: {', '.join(_OVERRIDE_TYPES)})")
    clean = {k: v for k, v in overrides.items() if v is not None}
    for key in ("embedding", "default_activation", "ffn_activation", "smolgen_activation"):
        if key in clean:
            clean[key] = str(clean[key]).lower().replace("-", "_")
    if "policy_heads" in clean:
        clean["policy_heads"] = tuple(clean["policy_heads"])
    if "value_heads" in clean:
        clean["value_heads"] = tuple(clean["value_heads"])
    return dataclasses.replace(PRESETS[preset], **clean).validated()


class _Gen:
    """Draws every array of one network from a single generator stream, in call order."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def normal(self, shape: tuple[int, ...], std: float, mean: float = 0.0) -> np.ndarray:
        x = self.rng.standard_normal(shape, dtype=np.float32)
        x *= np.float32(std)
        if mean:
            x += np.float32(mean)
        return x

    def dense(self, n_out: int, n_in: int, gain: float = 1.0, bias: bool = True,
              bias_std: float = 0.05) -> Dense:
        w = self.normal((n_out, n_in), gain / np.sqrt(n_in))
        return Dense(w, self.normal((n_out,), bias_std) if bias else None)

    def layer_norm(self, n: int, eps: float) -> LayerNorm:
        return LayerNorm(self.normal((n,), 0.1, mean=1.0), self.normal((n,), 0.05), eps)


def _policy_head(g: _Gen, c: Preset, embedding: Dense | None) -> PolicyHead:
    emb = embedding if embedding is not None else g.dense(c.policy_embedding, c.embedding_size)
    # gain 2.3 on Q and K: logits = q.k / sqrt(Pd) get a std of about 1-3 (tiny ~2, t82 ~1.2)
    wq = g.dense(c.policy_dmodel, c.policy_embedding, gain=2.3)
    wk = g.dense(c.policy_dmodel, c.policy_embedding, gain=2.3)
    promo = g.normal((4, c.policy_dmodel), 1.0 / np.sqrt(c.policy_dmodel))
    return PolicyHead(emb, wq, wk, promo)


def _value_head(g: _Gen, c: Preset) -> ValueHead:
    emb = g.dense(c.value_channels, c.embedding_size)
    fc1 = g.dense(c.value_hidden, 64 * c.value_channels, gain=2.0)
    fc2 = g.dense(3 if c.wdl else 1, c.value_hidden, gain=1.0, bias_std=0.1)
    return ValueHead(emb, fc1, fc2)


def random_network(preset: str = "tiny", seed: int = 0, **overrides: Any) -> Network:
    """A deterministic random-weight network of the named preset shape.

    ``overrides`` are ``Preset`` fields, e.g. ``heads=12, layers=1, embedding="pe_dense",
    smolgen=False, moves_left=False, gating=False, default_activation="relu",
    ffn_activation="mish", smolgen_activation="swish", input_format=3, multihead=True, wdl=False``.
    Raises ``UsageError`` for an unknown preset or setting.
    """
    c = preset_config(preset, **overrides)
    g = _Gen(seed)
    e, kind = c.embedding_size, EMBEDDINGS[c.embedding]
    effective = InputEmbedding.PE_DENSE if kind == InputEmbedding.PE_DENSE else InputEmbedding.PE_MAP
    eps = 1e-3 if effective == InputEmbedding.PE_DENSE else 1e-6
    default_act = Activation.MISH if c.default_activation == "mish" else Activation.RELU

    def resolve(name: str) -> Activation:
        act = ACTIVATIONS[name]
        return default_act if act == Activation.DEFAULT else act

    if effective == InputEmbedding.PE_DENSE:
        de = c.dense_embedding_size
        # the 768 preproc inputs are sparse 0/1 piece planes: a larger gain keeps U at O(1)
        preproc = g.dense(64 * de, 64 * 12, gain=4.0)
        embedding = Embedding(kind=effective, dense=g.dense(e, 112 + de, gain=2.0), preproc=preproc)
    else:
        dense = g.dense(e, 176, gain=2.0)
        # Emphasise the 112 planes over the 64 fixed positional-encoding columns (identical for
        # every position): without this the body's output, hence the value, barely moves between
        # positions.
        dense.w[:, :112] *= np.float32(2.0)
        dense.w[:, 112:] *= np.float32(0.5)
        embedding = Embedding(kind=effective, dense=dense)
    if c.gating:
        embedding.mult_gate = g.normal((e, 64), 0.1, mean=1.0)
        embedding.add_gate = g.normal((e, 64), 0.1)
    if effective == InputEmbedding.PE_DENSE:
        embedding.ln = g.layer_norm(e, 1e-3)
        embedding.ffn1 = g.dense(c.embedding_ffn_size, e)
        embedding.ffn2 = g.dense(e, c.embedding_ffn_size)
        embedding.ffn_ln = g.layer_norm(e, 1e-3)

    encoders = []
    for _ in range(c.layers):
        q, k, v = g.dense(e, e), g.dense(e, e), g.dense(e, e)
        out = g.dense(e, e)
        ln1 = g.layer_norm(e, eps)
        ffn1, ffn2 = g.dense(c.ffn_size, e), g.dense(e, c.ffn_size)
        ln2 = g.layer_norm(e, eps)
        smolgen = None
        if c.smolgen:
            hc, hs, gs = c.smolgen_channels, c.smolgen_hidden, c.smolgen_gen
            compress = g.normal((hc, e), 1.0 / np.sqrt(e))
            d1 = g.dense(hs, 64 * hc)
            sl1 = g.layer_norm(hs, 1e-3)
            d2 = g.dense(c.heads * gs, hs)
            sl2 = g.layer_norm(c.heads * gs, 1e-3)
            smolgen = Smolgen(compress, d1, sl1, d2, sl2)
        encoders.append(EncoderLayer(q, k, v, out, ln1, ffn1, ffn2, ln2, smolgen))
    smolgen_w = g.normal((4096, c.smolgen_gen), 1.0 / np.sqrt(c.smolgen_gen)) if c.smolgen else None

    policy_names = c.policy_heads if c.multihead else ("vanilla",)
    value_names = c.value_heads if c.multihead else ("winner",)
    shared_embedding = g.dense(c.policy_embedding, e)  # multi-head nets share ip_pol (policy_heads.ip_pol_w)
    policies = {name: _policy_head(g, c, shared_embedding) for name in policy_names}
    values = {name: _value_head(g, c) for name in value_names}

    moves_left = None
    if c.moves_left:
        moves_left = MovesLeftHead(
            g.dense(c.moves_left_channels, e),
            g.dense(c.moves_left_hidden, 64 * c.moves_left_channels, gain=2.0),
            _mlh_out(g, c),
        )

    fmt = NetworkFormat(
        input=InputFormat(c.input_format),
        output=OutputFormat.WDL if c.wdl else OutputFormat.CLASSICAL,
        network=NetworkKind.ATTENTIONBODY_WITH_MULTIHEADFORMAT if c.multihead
        else NetworkKind.ATTENTIONBODY_WITH_HEADFORMAT,
        policy=PolicyFormat.ATTENTION,
        value=ValueFormat.WDL if c.wdl else ValueFormat.CLASSICAL,
        moves_left=MovesLeftFormat.V1 if c.moves_left else MovesLeftFormat.NONE,
        default_activation=DEFAULT_ACTIVATIONS[c.default_activation],
        smolgen_activation=ACTIVATIONS[c.smolgen_activation],
        ffn_activation=ACTIVATIONS[c.ffn_activation],
        input_embedding=kind,
    )
    return Network(
        format=fmt,
        embedding=embedding,
        encoders=encoders,
        heads=c.heads,
        smolgen_w=smolgen_w,
        policy=policies["vanilla"],
        value=values["winner"],
        moves_left=moves_left,
        default_act=default_act,
        ffn_act=resolve(c.ffn_activation),
        smolgen_act=resolve(c.smolgen_activation),
        alpha=float((2.0 * c.layers) ** -0.25),
        encoder_eps=eps,
        available_policy_heads=tuple(policies),
        available_value_heads=tuple(values),
        license=f"lc0py random network: preset {preset}, seed {seed} (not a trained network)",
        extra={"policy_heads": policies, "value_heads": values},
    )


def _mlh_out(g: _Gen, c: Preset) -> Dense:
    """MLH output: a positive bias so the final ReLU passes most positions (outputs differ)."""
    w = g.normal((1, c.moves_left_hidden), 1.0 / np.sqrt(c.moves_left_hidden))
    return Dense(w, np.array([2.0], dtype=np.float32) + g.normal((1,), 0.1))
