"""The policy, value and moves-left heads every body reads alike (docs/weights-format.md §5.3).

Where each head's fields live (single-head nets at the top level of ``Weights``, multi-head nets in
``policy_heads``/``value_heads``), which head the user selected (lc0's ``policy_head`` and
``value_head`` backend options), building it (errors fatal) and every other one (skipped when
unusable, as lc0 never looks at them), the attention policy head (attention bodies and residual
nets with an attention policy), and the dense layers after each body's value and moves-left
embedding or convolution.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lc0py.errors import BackendOptionError, UnsupportedNetError, WeightsFormatError
from lc0py.weights.decode import layer_element_count
from lc0py.weights.network import DefaultActivation, Dense, MovesLeftFormat, PolicyHead, ValueFormat
from lc0py.weights.reader import LayerReader, enum_name, unsupported

_POLICY_EXTRA = (("optimistic", "optimistic_st"), ("soft", "soft"), ("opponent", "opponent"))
_VALUE_EXTRA = (("q", "q"), ("st", "st"))


def check_heads_and_activation(nf: Any, source: str) -> None:
    """The value, moves-left and default-activation formats every body shares (attention and
    residual): what lc0 0.32 runs, else one line naming the field."""
    value = int(nf.value)
    if value == ValueFormat.PARAM:
        unsupported(source, "VALUE_PARAM value heads are not supported (by lc0 either)")
    if value not in (ValueFormat.CLASSICAL, ValueFormat.WDL):
        unsupported(source, f"value format {enum_name(ValueFormat, value)} is not supported")
    if int(nf.moves_left) not in (MovesLeftFormat.NONE, MovesLeftFormat.V1):
        unsupported(source, f"moves-left format {int(nf.moves_left)} is not supported")
    if int(nf.default_activation) not in (DefaultActivation.RELU, DefaultActivation.MISH):
        unsupported(source, f"default activation {int(nf.default_activation)} is not supported")


class PolicySource:
    """Where one policy head's fields live, and which ``ip_pol_w``/``ip_pol_b`` layers it uses.

    lc0 (``MultiHeadWeights``): the shared embedding weight is ``policy_heads.ip_pol_w`` if that
    field is set, else the top-level ``ip_pol_w`` (the bias likewise, decided separately); a head's
    own non-empty ``ip_pol_w`` (or ``ip_pol_b``) replaces the shared one.
    """

    def __init__(self, msg: Any, prefix: str, emb_w: tuple[Any, str], emb_b: tuple[Any, str]) -> None:
        self.msg, self.prefix, self.emb_w, self.emb_b = msg, prefix, emb_w, emb_b


def policy_sources(w: Any, source: str) -> dict[str, PolicySource]:
    """The policy heads ``w`` stores, by lc0's names (``vanilla`` first)."""
    ph = w.policy_heads
    shared_w = (ph.ip_pol_w, "policy_heads.ip_pol_w") if ph.HasField("ip_pol_w") else (w.ip_pol_w, "ip_pol_w")
    shared_b = (ph.ip_pol_b, "policy_heads.ip_pol_b") if ph.HasField("ip_pol_b") else (w.ip_pol_b, "ip_pol_b")

    def source_for(head: Any, prefix: str) -> PolicySource:
        own_w = (head.ip_pol_w, prefix + "ip_pol_w") if len(head.ip_pol_w.params) else shared_w
        own_b = (head.ip_pol_b, prefix + "ip_pol_b") if len(head.ip_pol_b.params) else shared_b
        return PolicySource(head, prefix, own_w, own_b)

    if w.HasField("policy_heads"):
        heads = {"vanilla": source_for(ph.vanilla, "policy_heads.vanilla.")}
        for key, field in _POLICY_EXTRA:
            if ph.HasField(field):
                heads[key] = source_for(getattr(ph, field), f"policy_heads.{field}.")
        return heads
    if not (w.HasField("policy") or w.HasField("policy1") or w.HasField("ip_pol_w")):
        raise WeightsFormatError(f"{source}: could not find valid policy head weights")
    return {"vanilla": PolicySource(w, "", shared_w, shared_b)}


def value_sources(w: Any, source: str) -> dict[str, tuple[Any, str]]:
    """The value heads ``w`` stores, by lc0's names (``winner`` first): (message, field prefix)."""
    if w.HasField("value_heads"):
        vh = w.value_heads
        heads = {"winner": (vh.winner, "value_heads.winner.")}
        for key, field in _VALUE_EXTRA:
            if vh.HasField(field):
                heads[key] = (getattr(vh, field), f"value_heads.{field}.")
        return heads
    if not (w.HasField("value") or w.HasField("ip_val_w")):
        raise WeightsFormatError(f"{source}: could not find valid value head weights")
    return {"winner": (w, "")}


def select_head(kind: str, name: str, available: dict[str, Any]) -> Any:
    """The head named ``name``, or lc0's error naming the heads the net has."""
    if name not in available:
        raise BackendOptionError(
            f"The {kind} head you specified '{name}' does not exist in this net "
            f"(available: {', '.join(available)})"
        )
    return available[name]


def attention_policy_head(r: LayerReader, src: PolicySource, e: int, key: str) -> PolicyHead:
    """The attention policy head ``key`` over ``e``-wide tokens (docs/attention-body.md §8)."""
    m, p = src.msg, src.prefix
    if len(m.pol_encoder) > 0:
        unsupported(r.source, f"{p}pol_encoder: policy encoder layers are not supported on attention bodies")
    if layer_element_count(m.ip2_pol_b) == 0:  # counted: nothing is decoded before its size is checked
        r.fail(f"the policy head selected '{key}' is empty ({p}ip2_pol_b is missing)")
    emb_b = r.width(src.emb_b[0], src.emb_b[1], "the policy embedding size Pe")
    emb = Dense(r.array(src.emb_w[0], src.emb_w[1], (emb_b.size, e)), emb_b)
    pe = emb.n_out
    wq = r.dense(m, "ip2_pol_w", "ip2_pol_b", pe, p, "the policy d_model Pd")
    pd = wq.n_out
    wk = Dense(r.array(m.ip3_pol_w, p + "ip3_pol_w", (pd, pe)),
               r.optional_bias(m.ip3_pol_b, p + "ip3_pol_b", pd))
    promo = r.array(m.ip4_pol_w, p + "ip4_pol_w", (4, pd))
    return PolicyHead(emb, wq, wk, promo)


def require_value_head(r: LayerReader, msg: Any, prefix: str, key: str) -> None:
    """Fail when the selected value head has no weights (either body)."""
    if layer_element_count(msg.ip1_val_b) == 0:
        r.fail(f"the value head selected '{key}' is empty ({prefix}ip1_val_b is missing)")


def value_dense(r: LayerReader, msg: Any, prefix: str, n_in: int, wdl: bool) -> tuple[Dense, Dense]:
    """The value head's dense layers after its embedding or convolution (either body): ``ip1_val``
    (``n_in`` = 64 x channels -> hidden), ``ip2_val`` (hidden -> 3 WDL logits, or 1 for tanh)."""
    fc1 = r.dense(msg, "ip1_val_w", "ip1_val_b", n_in, prefix, "the value hidden size")
    n_out = 3 if wdl else 1
    w2 = r.array(msg.ip2_val_w, prefix + "ip2_val_w", (n_out, fc1.n_out))
    if wdl:
        b2 = r.optional_bias(msg.ip2_val_b, prefix + "ip2_val_b", 3)
    else:  # lc0 reads the tanh head's bias unconditionally
        b2 = r.array(msg.ip2_val_b, prefix + "ip2_val_b", (1,))
    return fc1, Dense(w2, b2)


def build_heads(r: LayerReader, sources: dict[str, Any], selected: str,
                build: Callable[[Any, str], Any]) -> tuple[Any, dict[str, Any]]:
    """Build the selected head (errors are fatal) and every other one (skipped if unusable)."""
    chosen = build(sources[selected], selected)
    all_heads = {selected: chosen}
    for key, src in sources.items():
        if key == selected:
            continue
        try:
            all_heads[key] = build(src, key)
        except (WeightsFormatError, UnsupportedNetError):
            continue  # lc0 never looks at heads that are not selected
    return chosen, {k: all_heads[k] for k in sources if k in all_heads}


_MOVES_LEFT_DENSE = ("ip1_mov_w", "ip1_mov_b", "ip2_mov_w", "ip2_mov_b")


def has_moves_left_weights(w: Any, *layers: str) -> bool:
    """Whether any moves-left layer is stored (the body's ``layers`` or the dense ones; a ConvBlock
    counts by its weights). lc0 plays ``moves_left = V1`` without any of them, with m = 0; lc0py
    then loads the net without a moves-left head (docs/weights-format.md §11)."""
    for name in (*layers, *_MOVES_LEFT_DENSE):
        field = getattr(w, name)
        layer = field.weights if hasattr(field, "bn_means") else field
        if layer_element_count(layer):
            return True
    return False


def moves_left_dense(r: LayerReader, w: Any, n_in: int) -> tuple[Dense, Dense]:
    """The moves-left head's dense layers after its embedding (attention body) or convolution
    (residual body): ``ip1_mov`` (``n_in`` = 64 x channels -> hidden), ``ip2_mov`` (hidden -> 1)."""
    fc1 = r.dense(w, "ip1_mov_w", "ip1_mov_b", n_in, "", "the moves-left hidden size")
    fc2 = Dense(r.array(w.ip2_mov_w, "ip2_mov_w", (1, fc1.n_out)),
                r.optional_bias(w.ip2_mov_b, "ip2_mov_b", 1))
    return fc1, fc2

