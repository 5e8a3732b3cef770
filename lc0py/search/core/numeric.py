"""lc0's float formulas, compiled: FastLog/FastExp, 16-bit priors, cpuct growth, FPU, PUCT score.

Every formula is written in float32 in lc0's order of operations (``src/utils/fastmath.h``,
``src/search/classic/search.cc``: ``ComputeCpuct``, ``GetFpu``; ``node.cc``: ``Edge::SetP/GetP``),
so scores agree with lc0's to the bit and close choices fall the same way. The verbose stats and
the tests call these same functions (one place for every formula).
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic, overload

from lc0py.search.core.jit import njit

F32 = np.float32


@intrinsic
def _f32_bits_intrinsic(typingctx, x):  # type: ignore[no-untyped-def]
    sig = types.int32(types.float32)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        return builder.bitcast(args[0], ir.IntType(32))

    return sig, codegen


@intrinsic
def _bits_f32_intrinsic(typingctx, x):  # type: ignore[no-untyped-def]
    sig = types.float32(types.int32)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        return builder.bitcast(args[0], ir.FloatType())

    return sig, codegen


def f32_bits(x: float) -> int:
    """The IEEE bits of a float32 as int32 (C++ ``memcpy``); compiled: one LLVM bitcast."""
    return np.int32(np.array(x, dtype=np.float32).view(np.int32))


def bits_f32(x: int) -> float:
    """The float32 whose IEEE bits are the int32 ``x``."""
    return np.float32(np.array(x, dtype=np.int32).view(np.float32))


@overload(f32_bits)
def _f32_bits_overload(x):  # type: ignore[no-untyped-def]
    return lambda x: _f32_bits_intrinsic(x)


@overload(bits_f32)
def _bits_f32_overload(x):  # type: ignore[no-untyped-def]
    return lambda x: _bits_f32_intrinsic(x)


@njit
def fast_log2(a: float) -> float:
    bits = f32_bits(F32(a))
    expb = (bits >> 23) & 0x1FF
    out = bits_f32(np.int32((bits & 0x7FFFFF) | (0x7F << 23))) - F32(1.0)
    return out * (F32(1.3465552) - F32(0.34655523) * out) - F32(127.0) + F32(expb)


@njit
def fast_log(a: float) -> float:
    return F32(0.6931471805599453) * fast_log2(F32(a))


@njit
def fast_exp2(a: float) -> float:
    a = F32(a)
    if a < F32(0.0):
        if a < F32(-126.0):
            return F32(0.0)
        e = np.int32(a - F32(1.0))
    else:
        e = np.int32(a)
    out = a - F32(e)
    out = F32(1.0) + out * (F32(0.6602339) + F32(0.33976606) * out)
    bits = np.int32(f32_bits(out) + np.int32(np.uint32(e) << np.uint32(23)))
    return bits_f32(bits)


@njit
def fast_exp(a: float) -> float:
    return fast_exp2(F32(1.442695040) * F32(a))


@njit
def prior_code(p: float) -> int:
    """``Edge::SetP``: bits 27..12 of the float, rounded; values below 2^-31 become 0."""
    tmp = np.int32(f32_bits(F32(p)) + np.int32((1 << 11) - (3 << 28)))
    if tmp < 0:
        return np.uint16(0)
    return np.uint16(tmp >> 12)


@njit
def prior_value(code: int) -> float:
    """``Edge::GetP``."""
    return bits_f32(np.int32((np.int32(code) << 12) | (3 << 28)))


@njit
def cpuct(init: float, factor: float, base: float, n: int) -> float:
    """``ComputeCpuct``: ``init + factor·FastLog((N + base) / base)`` in float32."""
    if factor == 0.0:
        return F32(init)
    return F32(init) + F32(factor) * fast_log((F32(n) + F32(base)) / F32(base))


@njit
def puct_mult(cpuct_value: float, n: int) -> float:
    """``cpuct · sqrt(max(N − 1, 1))`` (the sqrt in double, as lc0's ``std::sqrt(uint32)``)."""
    cv = n - 1 if n > 1 else 1
    return F32(np.float64(F32(cpuct_value)) * np.sqrt(np.float64(cv)))


@njit
def fpu_value(absolute: bool, value: float, q: float, visited_pol: float) -> float:
    """``GetFpu``: the Q of an unvisited child; ``q`` is the parent's ``GetQ(-draw_score)``."""
    if absolute:
        return F32(value)
    return -F32(q) - F32(value) * np.sqrt(F32(visited_pol))


@njit
def puct_score(p: float, mult: float, n_started: int, util: float) -> float:
    """``P · puct_mult / (1 + N_started) + util`` in float32."""
    return F32(p) * F32(mult) / F32(1 + n_started) + F32(util)


@njit
def m_utility(
    child_m: float,
    parent_m: float,
    q: float,
    slope: float,
    cap: float,
    a0: float,
    a1: float,
    a2: float,
    thr: float,
) -> float:
    """lc0's ``MEvaluator::GetMUtility`` (moves-left utility of a visited child)."""
    m = F32(slope) * (F32(child_m) - F32(parent_m))
    if m < -F32(cap):
        m = -F32(cap)
    elif m > F32(cap):
        m = F32(cap)
    qq = F32(q)
    m = m * F32(math.copysign(1.0, -qq))
    if F32(thr) > F32(0.0) and F32(thr) < F32(1.0):
        d = abs(qq) - F32(thr)
        qq = (d if d > F32(0.0) else F32(0.0)) / (F32(1.0) - F32(thr))
    return m * (F32(a0) + F32(a1) * abs(qq) + F32(a2) * qq * qq)


@njit
def softmax_codes(logits: np.ndarray, n: int, inv_temperature: float, out: np.ndarray) -> None:
    """lc0's ``SoftmaxPolicy`` (FastExp, sequential float sum) then ``SetP``: 16-bit codes."""
    mx = F32(-np.inf)
    for i in range(n):
        if logits[i] > mx:
            mx = logits[i]
    total = F32(0.0)
    tmp = np.empty(n, np.float32)
    for i in range(n):
        v = fast_exp((logits[i] - mx) * F32(inv_temperature))
        tmp[i] = v
        total += v
    scale = F32(1.0) / total if total > F32(0.0) else F32(1.0)
    for i in range(n):
        out[i] = prior_code(tmp[i] * scale)
