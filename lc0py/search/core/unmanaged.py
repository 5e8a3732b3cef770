"""The core's tuples of arrays without numba's reference counts, for the compiled inner calls.

numba raises and lowers the reference count of every array passed to a compiled call that is not
inlined (atomic operations on the array's ``MemInfo``), and the core's calls pass whole tuples of
arrays: the tree's 18, the positions', the cache's and the requests' 7 each. ``perf`` on the
development machine finds those operations with about as many samples as the compiled gather itself
(docs/performance.md §4). ``without_refcounts`` returns the same tuple with each array's
``MemInfo`` pointer cleared, so the counting becomes a null check; the arrays' memory, shapes and
strides are untouched. It is used at the top of an entry point called from Python: the views live
only inside that call while the caller holds the arrays themselves, so nothing is freed under them
(and the tree's arrays are grown only between calls).
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir
from numba import types
from numba.extending import intrinsic


@intrinsic
def without_refcounts(typingctx: Any, arrays: Any) -> Any:
    """``arrays`` (a named tuple of arrays) with no ``MemInfo`` on any of them."""
    if not isinstance(arrays, types.BaseNamedTuple):
        return None
    if not all(isinstance(a, types.Array) for a in arrays.types):
        return None
    sig = arrays(arrays)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        (value,) = args
        out = value
        for i, array_type in enumerate(signature.args[0].types):
            array = context.make_array(array_type)(context, builder, builder.extract_value(value, i))
            array.meminfo = ir.Constant(array.meminfo.type, None)
            out = builder.insert_value(out, array._getvalue(), i)
        return out

    return sig, codegen
