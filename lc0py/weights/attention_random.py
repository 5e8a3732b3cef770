"""Generated attention-body networks: the shape (``Preset``) and a deterministic random ``Network``.

``random_attention_network`` draws every array from one ``LayerGenerator`` stream (``generation.py``)
in a fixed order. Scaling keeps every activation O(1) (each encoder sublayer ends in a LayerNorm), so
fp16 inference stays finite, while the policy Q/K projections get a gain that makes the logits'
standard deviation about 1-3 and the WDL head stays away from saturation: outputs differ clearly
between positions, which is what tests of backends need.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from lc0py.errors import UsageError
from lc0py.weights.generation import DEFAULT_ACTIVATIONS, LayerGenerator, check_input_format
from lc0py.weights.network import (
    Activation,
    BodyKind,
    Dense,
    Embedding,
    EncoderLayer,
    InputEmbedding,
    InputFormat,
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
POLICY_HEAD_NAMES = ("vanilla", "optimistic", "soft", "opponent")
VALUE_HEAD_NAMES = ("winner", "q", "st")


@dataclass(frozen=True)
class Preset:
    """The shape and format of a generated attention-body network (docs/attention-body.md §1
    symbols in comments)."""

    body: ClassVar[BodyKind] = "attention"
    depth_field: ClassVar[str] = "layers"  # the setting ``--layers`` overrides (tools)

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
        check_input_format(self.input_format)
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

    def estimated_parameters(self) -> int:
        """A lower bound on the parameter count (the big matrices only), without generating."""
        e, f = self.embedding_size, self.ffn_size
        layer = 4 * e * e + 2 * e * f
        if self.smolgen:
            layer += self.smolgen_channels * e + 64 * self.smolgen_channels * self.smolgen_hidden
            layer += self.smolgen_hidden * self.heads * self.smolgen_gen
        if self.embedding == "pe_dense":
            embedding = 768 * self.dense_embedding_size + (112 + self.dense_embedding_size // 64) * e
            embedding += 2 * e * self.embedding_ffn_size
        else:
            embedding = 176 * e
        heads = e * self.policy_embedding + 2 * self.policy_embedding * self.policy_dmodel
        heads += 64 * self.value_channels * self.value_hidden
        return self.layers * layer + embedding + heads + (4096 * self.smolgen_gen if self.smolgen else 0)

    def summary(self) -> str:
        return f"E={self.embedding_size} L={self.layers} H={self.heads} {self.embedding}"


def _policy_head(g: LayerGenerator, c: Preset, embedding: Dense | None) -> PolicyHead:
    emb = embedding if embedding is not None else g.dense(c.policy_embedding, c.embedding_size)
    # gain 2.3 on Q and K: logits = q.k / sqrt(Pd) get a std of about 1-3 (tiny ~2, t82 ~1.2)
    wq = g.dense(c.policy_dmodel, c.policy_embedding, gain=2.3)
    wk = g.dense(c.policy_dmodel, c.policy_embedding, gain=2.3)
    promo = g.normal((4, c.policy_dmodel), 1.0 / np.sqrt(c.policy_dmodel))
    return PolicyHead(emb, wq, wk, promo)


def _value_head(g: LayerGenerator, c: Preset) -> ValueHead:
    emb = g.dense(c.value_channels, c.embedding_size)
    fc1 = g.dense(c.value_hidden, 64 * c.value_channels, gain=2.0)
    fc2 = g.dense(3 if c.wdl else 1, c.value_hidden, gain=1.0, bias_std=0.1)
    return ValueHead(emb, fc1, fc2)


def random_attention_network(c: Preset, seed: int, preset: str) -> Network:
    """A deterministic random-weight attention-body network of shape ``c`` (already validated),
    named ``preset`` in its license."""
    g = LayerGenerator(seed)
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


def _mlh_out(g: LayerGenerator, c: Preset) -> Dense:
    """MLH output: a positive bias so the final ReLU passes most positions (outputs differ)."""
    w = g.normal((1, c.moves_left_hidden), 1.0 / np.sqrt(c.moves_left_hidden))
    return Dense(w, np.array([2.0], dtype=np.float32) + g.normal((1,), 0.1))
