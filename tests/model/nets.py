"""Small random ``Network``s built directly (no file, no presets) for testing the model math.

Weights are scaled ~1/sqrt(fan_in) so activations stay O(1) and the outputs are not saturated
(a saturated softmax would hide errors). ``build_network`` covers every structural switch the
forward pass has: embedding kind, gating, smolgen, moves-left, WDL/classical value, activations,
absent biases.
"""

from __future__ import annotations

import numpy as np

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


class _Gen:
    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def dense(self, n_out: int, n_in: int, bias: bool = True, scale: float = 1.0) -> Dense:
        w = (self.rng.standard_normal((n_out, n_in)) * scale / np.sqrt(n_in)).astype(np.float32)
        b = (self.rng.standard_normal(n_out) * 0.1).astype(np.float32) if bias else None
        return Dense(w, b)

    def ln(self, n: int, eps: float) -> LayerNorm:
        g = (1.0 + 0.1 * self.rng.standard_normal(n)).astype(np.float32)
        b = (0.1 * self.rng.standard_normal(n)).astype(np.float32)
        return LayerNorm(g, b, eps)

    def array(self, *shape: int, scale: float = 1.0, offset: float = 0.0) -> np.ndarray:
        return (offset + scale * self.rng.standard_normal(shape)).astype(np.float32)


def build_network(
    *,
    seed: int = 0,
    embedding: InputEmbedding = InputEmbedding.PE_MAP,
    layers: int = 2,
    e: int = 32,
    heads: int = 4,
    dff: int = 48,
    smolgen: bool = True,
    gating: bool = True,
    moves_left: bool = True,
    wdl: bool = True,
    default_act: Activation = Activation.MISH,
    ffn_act: Activation = Activation.RELU_2,
    smolgen_act: Activation = Activation.SWISH,
    hc: int = 4,
    hs: int = 16,
    gs: int = 8,
    pe: int = 24,
    pd: int = 20,
    de: int = 6,
    fe: int = 40,
    input_format: InputFormat = InputFormat.CLASSICAL_112_PLANE,
) -> Network:
    """A random attention-body ``Network`` with the given structure (all sizes small by default)."""
    g = _Gen(seed)
    dense_kind = embedding == InputEmbedding.PE_DENSE
    eps = 1e-3 if dense_kind else 1e-6
    cin = 112 + de if dense_kind else 176
    emb = Embedding(
        kind=InputEmbedding.PE_DENSE if dense_kind else InputEmbedding.PE_MAP, dense=g.dense(e, cin)
    )
    if gating:
        emb.mult_gate = g.array(e, 64, scale=0.2, offset=1.0)
        emb.add_gate = g.array(e, 64, scale=0.2)
    if dense_kind:
        emb.preproc = g.dense(64 * de, 64 * 12)
        emb.ln = g.ln(e, 1e-3)
        emb.ffn1 = g.dense(fe, e)
        emb.ffn2 = g.dense(e, fe)
        emb.ffn_ln = g.ln(e, 1e-3)
    encs = []
    for _ in range(layers):
        sg = None
        if smolgen:
            sg = Smolgen(
                compress=g.array(hc, e, scale=1 / np.sqrt(e)),
                dense1=g.dense(hs, 64 * hc),
                ln1=g.ln(hs, 1e-3),
                dense2=g.dense(heads * gs, hs),
                ln2=g.ln(heads * gs, 1e-3),
            )
        encs.append(
            EncoderLayer(
                q=g.dense(e, e),
                k=g.dense(e, e),
                v=g.dense(e, e),
                out=g.dense(e, e),
                ln1=g.ln(e, eps),
                ffn1=g.dense(dff, e),
                ffn2=g.dense(e, dff),
                ln2=g.ln(e, eps),
                smolgen=sg,
            )
        )
    policy = PolicyHead(
        embedding=g.dense(pe, e),
        wq=g.dense(pd, pe),
        wk=g.dense(pd, pe),
        promotion=g.array(4, pd, scale=1 / np.sqrt(pd)),
    )
    value = ValueHead(embedding=g.dense(8, e), fc1=g.dense(32, 64 * 8), fc2=g.dense(3 if wdl else 1, 32))
    mlh = None
    if moves_left:
        mlh = MovesLeftHead(embedding=g.dense(4, e), fc1=g.dense(16, 64 * 4), fc2=g.dense(1, 16))
        mlh.fc2.b = np.array([5.0], dtype=np.float32)  # keep the ReLU mostly active
    fmt = NetworkFormat(
        input=input_format,
        output=OutputFormat.WDL if wdl else OutputFormat.CLASSICAL,
        network=NetworkKind.ATTENTIONBODY_WITH_HEADFORMAT,
        policy=PolicyFormat.ATTENTION,
        value=ValueFormat.WDL if wdl else ValueFormat.CLASSICAL,
        moves_left=MovesLeftFormat.V1 if moves_left else MovesLeftFormat.NONE,
        default_activation=(
            DefaultActivation.MISH if default_act == Activation.MISH else DefaultActivation.RELU
        ),
        smolgen_activation=smolgen_act,
        ffn_activation=ffn_act,
        input_embedding=emb.kind,
    )
    return Network(
        format=fmt,
        embedding=emb,
        encoders=encs,
        heads=heads,
        smolgen_w=g.array(4096, gs, scale=1 / np.sqrt(gs)) if smolgen else None,
        policy=policy,
        value=value,
        moves_left=mlh,
        default_act=default_act,
        ffn_act=ffn_act,
        smolgen_act=smolgen_act,
        alpha=(2 * layers) ** -0.25,
        encoder_eps=eps,
    )


def random_planes(rng: np.random.Generator, batch: int) -> np.ndarray:
    """Random but plausible ``[B, 112, 8, 8]`` inputs: sparse 0/1 piece planes, scalar aux planes."""
    planes = (rng.random((batch, 112, 8, 8)) < 0.08).astype(np.float32)
    planes[:, 104:112] = 0.0
    for p in (104, 105, 106, 107, 108, 110):
        planes[:, p] = (rng.random((batch, 1, 1)) < 0.5).astype(np.float32)
    planes[:, 109] = rng.integers(0, 100, size=(batch, 1, 1)).astype(np.float32) / 100.0
    planes[:, 111] = 1.0
    return planes
