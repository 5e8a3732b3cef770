"""Typed, validated description of an lc0 network: the interface every body shares
(``BaseNetwork``) and the attention body (``Network``); the residual body is
``lc0py.weights.residual.ResidualNetwork``.

This is what the loader (``lc0py.weights.load_network``) builds from a ``.pb.gz`` file and what every
backend consumes. All arrays are float32 numpy arrays in lc0's *storage* layouts (see
``docs/weights-format.md`` §6): a dense layer is ``y = x @ w.T + b`` with ``w`` shaped
``[out, in]``. Enumerations use lc0's proto numbers so files round-trip unchanged.

Format-level decisions (which head is selected, the LayerNorm epsilon, DeepNorm alpha, effective
activations) are resolved once here, so backends never re-derive them.
"""

from __future__ import annotations

import enum
from dataclasses import KW_ONLY, dataclass, field
from typing import ClassVar, Literal

import numpy as np


class InputFormat(enum.IntEnum):
    """``NetworkFormat.input``: how the 112 input planes are encoded (docs/input-encoding.md §2)."""

    UNKNOWN = 0
    CLASSICAL_112_PLANE = 1
    WITH_CASTLING_PLANE = 2
    WITH_CANONICALIZATION = 3
    WITH_CANONICALIZATION_HECTOPLIES = 4
    WITH_CANONICALIZATION_HECTOPLIES_ARMAGEDDON = 132
    WITH_CANONICALIZATION_V2 = 5
    WITH_CANONICALIZATION_V2_ARMAGEDDON = 133


class OutputFormat(enum.IntEnum):
    UNKNOWN = 0
    CLASSICAL = 1
    WDL = 2


class NetworkKind(enum.IntEnum):
    """``NetworkFormat.network``."""

    UNKNOWN = 0
    CLASSICAL = 1
    SE = 2
    CLASSICAL_WITH_HEADFORMAT = 3
    SE_WITH_HEADFORMAT = 4
    ONNX = 5
    ATTENTIONBODY_WITH_HEADFORMAT = 6
    ATTENTIONBODY_WITH_MULTIHEADFORMAT = 7
    AB_LEGACY_WITH_MULTIHEADFORMAT = 134


class PolicyFormat(enum.IntEnum):
    UNKNOWN = 0
    CLASSICAL = 1
    CONVOLUTION = 2
    ATTENTION = 3


class ValueFormat(enum.IntEnum):
    UNKNOWN = 0
    CLASSICAL = 1
    WDL = 2
    PARAM = 3


class MovesLeftFormat(enum.IntEnum):
    NONE = 0
    V1 = 1


class DefaultActivation(enum.IntEnum):
    RELU = 0
    MISH = 1


class Activation(enum.IntEnum):
    """``ActivationFunction``; ``DEFAULT`` is resolved by the loader, never seen by backends."""

    DEFAULT = 0
    MISH = 1
    RELU = 2
    NONE = 3
    TANH = 4
    SIGMOID = 5
    SELU = 6
    SWISH = 7
    RELU_2 = 8
    SOFTMAX = 9


class InputEmbedding(enum.IntEnum):
    NONE = 0
    PE_MAP = 1
    PE_DENSE = 2


class WeightsEncoding(enum.IntEnum):
    """``Weights.Layer.encoding``; absent means LINEAR16."""

    UNKNOWN = 0
    LINEAR16 = 1
    FLOAT16 = 2
    BFLOAT16 = 3
    FLOAT32 = 4


class WeightedLayer:
    """``n_out`` and ``n_in`` of a layer whose weight ``w`` is ``[out, in, ...]`` (dense layers,
    convolutions)."""

    w: np.ndarray

    @property
    def n_out(self) -> int:
        return int(self.w.shape[0])

    @property
    def n_in(self) -> int:
        return int(self.w.shape[1])


@dataclass
class Dense(WeightedLayer):
    """A dense layer ``y = x @ w.T + b``; ``w`` is ``[out, in]``.

    ``b is None`` means the file has no bias for this layer; lc0's blas backend then applies
    neither bias nor activation (docs/attention-body.md §4.6), and so do we.
    """

    w: np.ndarray
    b: np.ndarray | None


@dataclass
class LayerNorm:
    """LayerNorm over the last axis: ``(v - mean) / sqrt(var + eps) * gamma + beta``."""

    gamma: np.ndarray
    beta: np.ndarray
    eps: float


@dataclass
class Smolgen:
    """Per-layer smolgen weights (docs/attention-body.md §4.3); ``hc, hs, gs`` derive from shapes."""

    compress: np.ndarray  # [hc, E], no bias
    dense1: Dense  # [hs, 64*hc]
    ln1: LayerNorm  # [hs], eps 1e-3
    dense2: Dense  # [H*gs, hs]
    ln2: LayerNorm  # [H*gs], eps 1e-3

    @property
    def hidden_channels(self) -> int:
        return int(self.compress.shape[0])

    @property
    def hidden_size(self) -> int:
        return int(self.dense1.w.shape[0])


@dataclass
class EncoderLayer:
    """One post-LN encoder block (docs/attention-body.md §4)."""

    q: Dense  # [D, E]
    k: Dense  # [D, E]
    v: Dense  # [D, E]
    out: Dense  # [E, D]   (mha.dense)
    ln1: LayerNorm  # [E]
    ffn1: Dense  # [Fd, E]
    ffn2: Dense  # [E, Fd]
    ln2: LayerNorm  # [E]
    smolgen: Smolgen | None = None


@dataclass
class Embedding:
    """Input embedding (docs/attention-body.md §3).

    ``kind`` is the effective embedding: ``PE_MAP`` (also used for files that say ``NONE`` but have
    no residual tower, as lc0's blas/CUDA do) or ``PE_DENSE``.
    """

    kind: InputEmbedding
    dense: Dense  # ip_emb: [E, Cin]; Cin = 176 (PE_MAP) or 112 + dE (PE_DENSE)
    mult_gate: np.ndarray | None = None  # [E, 64] (channel-major), only if both gates present
    add_gate: np.ndarray | None = None  # [E, 64]
    # PE_DENSE only:
    preproc: Dense | None = None  # [64*dE, 64*12]
    ln: LayerNorm | None = None  # ip_emb_ln, eps 1e-3
    ffn1: Dense | None = None  # ip_emb_ffn.dense1 [Fe, E]
    ffn2: Dense | None = None  # ip_emb_ffn.dense2 [E, Fe]
    ffn_ln: LayerNorm | None = None  # ip_emb_ffn_ln, eps 1e-3


@dataclass
class PolicyHead:
    """Attention policy head (docs/attention-body.md §8)."""

    embedding: Dense  # ip_pol: [Pe, E], activation = default
    wq: Dense  # ip2_pol: [Pd, Pe]
    wk: Dense  # ip3_pol: [Pd, Pe]
    promotion: np.ndarray  # ip4_pol_w: [4, Pd] (queen, rook, bishop, knight), no bias


@dataclass
class ValueHead:
    """WDL (3 outputs, softmax) or classical (1 output, tanh) value head (§9)."""

    embedding: Dense  # ip_val: [Vc, E]
    fc1: Dense  # ip1_val: [128, 64*Vc]
    fc2: Dense  # ip2_val: [3 or 1, 128]

    @property
    def wdl(self) -> bool:
        return self.fc2.n_out == 3


@dataclass
class MovesLeftHead:
    """Moves-left head (§10); the final ReLU is skipped when ``fc2.b is None`` (blas)."""

    embedding: Dense  # ip_mov: [Mc, E]
    fc1: Dense  # ip1_mov: [Mh, 64*Mc]
    fc2: Dense  # ip2_mov: [1, Mh]


@dataclass
class NetworkFormat:
    """The normalised ``NetworkFormat`` (after lc0's ``FixOlderWeightsFile`` rules)."""

    input: InputFormat
    output: OutputFormat
    network: NetworkKind
    policy: PolicyFormat
    value: ValueFormat
    moves_left: MovesLeftFormat
    default_activation: DefaultActivation
    smolgen_activation: Activation  # as stored (may be DEFAULT)
    ffn_activation: Activation  # as stored (may be DEFAULT)
    input_embedding: InputEmbedding  # as normalised


#: The network bodies lc0py runs: ``Network`` (transformer) and ``ResidualNetwork`` (SE-ResNet).
BodyKind = Literal["attention", "residual"]


@dataclass
class BaseNetwork:
    """The one network interface, whatever the body (attention ``Network``, convolutional
    ``ResidualNetwork``), as lc0 keeps both bodies behind one network class: its format (input
    encoding, value and moves-left heads), the version gate, the selected and available head names,
    the license and unknown extras, its size (``parameter_count``, ``flops_per_position``) and the
    attention layers per-layer tools read (``attention_layers``).

    ``body`` names the body kind. It is the key of the one table by which each package runs a body:
    reading and writing (``weights.loader``, ``weights.writer``), the reference forward pass
    (``model.forward``) and the ONNX graph (``backends.onnx.export``).

    The fields after ``format`` are keyword-only, so each body's own fields follow ``format`` in
    its constructor.
    """

    body: ClassVar[BodyKind]
    format: NetworkFormat
    _: KW_ONLY
    min_version: tuple[int, int, int] = (0, 0, 0)
    policy_head_name: str = "vanilla"
    value_head_name: str = "winner"
    available_policy_heads: tuple[str, ...] = ("vanilla",)
    available_value_heads: tuple[str, ...] = ("winner",)
    license: str = ""
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def input_format(self) -> InputFormat:
        """How positions are encoded into the 112 input planes for this net."""
        return self.format.input

    @property
    def has_wdl(self) -> bool:
        """Search treats the value as WDL when the format's output says so (lc0's rule)."""
        return self.format.output == OutputFormat.WDL

    @property
    def has_moves_left(self) -> bool:
        """Whether the net has a moves-left head (each body says)."""
        raise NotImplementedError

    def flops_per_position(self) -> int:
        """Multiply-add FLOPs (2 per MAC) of one forward pass (each body counts its own)."""
        raise NotImplementedError

    def summary(self) -> str:
        """The body and its size in a few words ("attention 15x768, 24 heads", "residual 20x256"),
        as ``repr(net)`` and the ONNX metadata say it."""
        raise NotImplementedError

    def attention_layers(self) -> tuple[list[EncoderLayer], int]:
        """The body's attention encoder layers and their head count, what per-layer attention tools
        (traces, tuned attention kernels) work on; ``([], 0)`` for a body without attention."""
        return [], 0

    def parameter_count(self) -> int:
        """Number of weight parameters (every array reachable from the fields but ``extra``, an
        array held twice counted once), as a describenet extra."""
        total = 0
        stack: list[object] = [self]
        seen: set[int] = set()
        while stack:
            obj = stack.pop()
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            if isinstance(obj, np.ndarray):
                total += int(obj.size)
            elif isinstance(obj, list | tuple):
                stack.extend(obj)
            elif hasattr(obj, "__dataclass_fields__"):
                stack.extend(getattr(obj, name) for name in obj.__dataclass_fields__ if name != "extra")
        return total


@dataclass
class Network(BaseNetwork):
    """A loaded attention-body network with the selected policy/value heads.

    Resolved values backends use directly:
      * ``default_act``, ``ffn_act``, ``smolgen_act``: concrete activations (never DEFAULT);
      * ``alpha``: DeepNorm residual scale ``(2L)^(-1/4)``;
      * ``encoder_eps``: 1e-3 for PE_DENSE nets, else 1e-6 (already stored in each LayerNorm).
    """

    body: ClassVar[BodyKind] = "attention"
    embedding: Embedding
    encoders: list[EncoderLayer]
    heads: int
    smolgen_w: np.ndarray | None  # [4096, gs] shared by all layers, or None without smolgen
    policy: PolicyHead
    value: ValueHead
    moves_left: MovesLeftHead | None
    default_act: Activation
    ffn_act: Activation
    smolgen_act: Activation
    alpha: float
    encoder_eps: float

    # --- derived sizes (docs/weights-format.md §6.1) ---
    @property
    def embedding_size(self) -> int:
        """``E``."""
        return self.embedding.dense.n_out

    @property
    def d_model(self) -> int:
        """``D``, the attention width (``len(q_b)``)."""
        return self.encoders[0].q.n_out if self.encoders else self.embedding_size

    @property
    def depth(self) -> int:
        """Per-head depth ``D / H``."""
        return self.d_model // self.heads

    @property
    def num_layers(self) -> int:
        return len(self.encoders)

    def summary(self) -> str:
        return f"attention {self.num_layers}x{self.embedding_size}, {self.heads} heads"

    @property
    def ffn_size(self) -> int:
        return self.encoders[0].ffn1.n_out if self.encoders else 0

    @property
    def has_smolgen(self) -> bool:
        return self.smolgen_w is not None and any(e.smolgen is not None for e in self.encoders)

    @property
    def has_moves_left(self) -> bool:
        return self.moves_left is not None

    def attention_layers(self) -> tuple[list[EncoderLayer], int]:
        return self.encoders, self.heads

    def flops_per_position(self) -> int:
        """Multiply-add FLOPs (2 per MAC) of one forward pass (docs/attention-body.md §13)."""
        t = 64
        e, d, h = self.embedding_size, self.d_model, self.heads
        fl = 2 * t * self.embedding.dense.n_in * e
        if self.embedding.preproc is not None:
            fl += 2 * self.embedding.preproc.n_in * self.embedding.preproc.n_out
        if self.embedding.ffn1 is not None:
            fl += 2 * 2 * t * e * self.embedding.ffn1.n_out
        for layer in self.encoders:
            fl += 2 * t * e * d * 3 + 2 * t * t * d * 2 + 2 * t * d * e + 2 * 2 * t * e * layer.ffn1.n_out
            if layer.smolgen is not None and self.smolgen_w is not None:
                sg = layer.smolgen
                gs = int(self.smolgen_w.shape[1])
                fl += 2 * t * e * sg.hidden_channels + 2 * t * sg.hidden_channels * sg.hidden_size
                fl += 2 * sg.hidden_size * h * gs + 2 * h * gs * 4096
        pe, pd = self.policy.embedding.n_out, self.policy.wq.n_out
        fl += 2 * t * e * pe + 2 * 2 * t * pe * pd + 2 * t * t * pd + 2 * 8 * pd * 4
        v = self.value
        fl += 2 * t * e * v.embedding.n_out + 2 * v.fc1.n_in * v.fc1.n_out + 2 * v.fc2.n_in * v.fc2.n_out
        if self.moves_left is not None:
            m = self.moves_left
            fl += 2 * t * e * m.embedding.n_out + 2 * m.fc1.n_in * m.fc1.n_out + 2 * m.fc2.n_in
        return fl
