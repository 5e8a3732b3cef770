"""Per-shape cuBLASLt algorithms for the large fp16 GEMMs: timed on the device once, then kept.

Why: ``cublasGemmEx`` runs cuBLAS's first heuristic choice. For the large GEMMs of a transformer
pass other algorithms that cuBLASLt's heuristic offers for the same problem are faster: one
H200, 2026-11-29, T82's GEMMs at 1024 positions, each timed in a graph of 10 calls
(bench/results/2026-11-29_h200-gemmalgo_33bf872/): QKV 362.7 → 326.2 µs, the out-projection
138.5 → 123.4, FFN1 188.7 → 155.7, FFN2 188.4 → 159.8, the smolgen generator 113.2 → 87.2;
at 256 positions 4–17 % per GEMM. At 1–32 positions cuBLAS's first choice was already the
fastest (2026-11-28), and there a GEMM's time is its launch, so only GEMMs of at least
``min_flops`` are looked at.

How (``LtAlgos.gemm``): the first eager call of an eligible GEMM (never inside a graph capture:
the runner's eager pass before each capture comes first) asks the heuristic for up to
``CANDIDATES`` algorithms and times each, and ``cublasGemmEx`` itself, on the same stream into a
scratch output (``CALLS`` calls captured in a graph, so that the host's cost of a ctypes call is
not what is timed; ``ROUNDS`` interleaved replays, the best of each). The
fastest is kept if it takes at most ``MARGIN`` of ``cublasGemmEx``'s time; otherwise the GEMM stays
on ``cublasGemmEx``. Later calls, and the graphs captured after, run the choice. The choices are
written to the tuned folder (``AlgoStore``: one verified entry per device and cuBLASLt version),
once after each ``prepare`` and on ``close`` (``LtAlgos.flush``), so the next process only asks
the heuristic again and finds the kept algorithm by its bytes; one it no longer offers is timed
afresh.

GEMMs kept to fewer multiprocessors (``sms``: beside side-stream work, e.g. T82's QKV GEMM beside
smolgen's branch up to 128 positions) stay on ``cublasGemmEx``. Timed and run under the same
target (cuBLASLt's ``SM_COUNT_TARGET``), T82's took ×1.03–1.20 less time alone but the pass
×0.971 at 64 positions and ×1.018 at 96 (one H200, 2026-11-29, graph replay,
bench/results/2026-11-29_h200-gemmsms_114fd6b/): alone, an algorithm is not timed beside the
side-stream work it shares the device with.

The problem is the column-major call that ``cublasGemmEx`` would get (``GemmCall``), so the same
transposes, leading dimensions and pointers go to ``cublasLtMatmul`` (C is D: in place, as
``cublasGemmEx``). Pointer alignment is part of the key, and the heuristic is told it
(``MIN_ALIGNMENT_*``), so an algorithm is never run on pointers it was not chosen for.

Numerics: another algorithm sums in another order (fp32 accumulation either way), so outputs may
differ from ``cublasGemmEx``'s in the last fp16 bits; the backend's tests against the float64
reference hold for both (``gemm_tune=off`` keeps ``cublasGemmEx``).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import json
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lc0py.gpu.platform import GpuError, Platform

log = logging.getLogger("lc0py.gpu")

#: Algorithms asked of the heuristic per problem (it offered 8 for each of T82's shapes).
CANDIDATES = 16
#: A candidate replaces ``cublasGemmEx`` only if it takes at most this share of its time: below
#: a few per cent the choice would follow the timing noise.
MARGIN = 0.97
ROUNDS = 3
CALLS = 5
#: GEMMs below this many FLOPs (2·m·n·k) stay on ``cublasGemmEx`` (``gemm_tune_min``, in GFLOP):
#: T82's QKV GEMM passes it from ~22 positions, the generator from ~80.
DEFAULT_MIN_GFLOP = 4.0
#: The store's format; a change makes saved choices stale.
STORE_VERSION = 1

# cublasLt enums (cublasLt.h, library_types.h)
_CUDA_R_16F, _CUDA_R_32F = 2, 0
_COMPUTE_32F = 68
_DESC_TRANSA, _DESC_TRANSB = 3, 4
_PREF_MAX_WORKSPACE_BYTES = 1
_PREF_MIN_ALIGNMENT = {"a": 5, "b": 6, "c": 7, "d": 8}
_LAYOUT_BATCH_COUNT, _LAYOUT_STRIDED_BATCH_OFFSET = 5, 6  # int32, int64 (elements)


def alignment(ptr: int) -> int:
    """The largest power of two (at most 256) that divides the device address ``ptr``."""
    if ptr == 0:
        return 256
    return min(256, ptr & -ptr)


@dataclass(frozen=True)
class LtProblem:
    """One column-major fp16 GEMM ``C[m, n] = op(A) op(B) (+ C)`` as ``cublasGemmEx`` gets it."""

    trans_a: bool
    trans_b: bool
    m: int
    n: int
    k: int
    lda: int
    ldb: int
    ldc: int
    accumulate: bool  # beta != 0
    align_a: int
    align_b: int
    align_c: int
    batch: int = 1  # strided-batched (``cublasGemmStridedBatchedEx``) when > 1
    stride_a: int = 0  # elements between the batch's matrices
    stride_b: int = 0
    stride_c: int = 0

    @property
    def flops(self) -> float:
        return 2.0 * self.m * self.n * self.k * self.batch

    @property
    def c_elements(self) -> int:
        """Elements from C's first to its last (every matrix of the batch)."""
        return self.stride_c * (self.batch - 1) + self.ldc * self.n

    def key(self) -> str:
        """The problem as one string (the store's key)."""
        ops = ("T" if self.trans_a else "N") + ("T" if self.trans_b else "N")
        text = (
            f"{ops} {self.m}x{self.n}x{self.k} ld {self.lda},{self.ldb},{self.ldc} "
            f"beta {int(self.accumulate)} align {self.align_a},{self.align_b},{self.align_c}"
        )
        if self.batch > 1:
            text += f" batch {self.batch} strides {self.stride_a},{self.stride_b},{self.stride_c}"
        return text

    @classmethod
    def from_call(cls, call: Any, beta: float) -> LtProblem:
        """From a ``vendor_platform.GemmCall``: its first operand is A."""
        batched = call.batch > 1
        return cls(
            trans_a=call.trans_first,
            trans_b=call.trans_second,
            m=call.m,
            n=call.n,
            k=call.k,
            lda=call.ld_first,
            ldb=call.ld_second,
            ldc=call.ldc,
            accumulate=beta != 0.0,
            align_a=alignment(call.first),
            align_b=alignment(call.second),
            align_c=alignment(call.c),
            batch=call.batch,
            stride_a=call.stride_first if batched else 0,
            stride_b=call.stride_second if batched else 0,
            stride_c=call.stride_c if batched else 0,
        )


def pick(default_ms: float, timed: Sequence[tuple[int, float | None]], margin: float = MARGIN) -> int | None:
    """The index of the fastest candidate if it takes at most ``margin`` of ``default_ms``, else
    ``None`` (keep ``cublasGemmEx``). A candidate that failed (``None``) or timed as NaN/inf or
    non-positive is skipped; so is everything when the default's own time is not finite."""
    if not (math.isfinite(default_ms) and default_ms > 0):
        return None
    ok = [(i, t) for i, t in timed if t is not None and math.isfinite(t) and t > 0]
    if not ok:
        return None
    best_i, best_t = min(ok, key=lambda it: it[1])
    return best_i if best_t <= margin * default_ms else None


class AlgoStore:
    """The kept choices of one device and cuBLASLt version, as one verified entry of the tuned
    folder (``storage.cache.EntryStore``): ``{problem key: {"algo": [8 ints] | None, ...}}``,
    ``None`` meaning "``cublasGemmEx`` was fastest". ``folder=None``: in memory only."""

    def __init__(self, folder: Path | None, fingerprint: str) -> None:
        self.folder = folder
        self.fingerprint = fingerprint
        self.name = "gemm-algos-" + hashlib.sha256(fingerprint.encode()).hexdigest()[:16] + ".json"
        self.choices: dict[str, dict[str, Any]] = self._read()
        self._unsaved: set[str] = set()

    def _inputs(self) -> str:
        return f"gemm-algos v{STORE_VERSION} {self.fingerprint}"

    def _read(self) -> dict[str, dict[str, Any]]:
        if self.folder is None:
            return {}
        from lc0py.storage import cache as storage_cache

        data = storage_cache.EntryStore(self.folder, "tuned").load(self.name, self._inputs())
        if data is None:
            return {}
        try:
            doc = json.loads(data)
            if doc.get("version") != STORE_VERSION or doc.get("fingerprint") != self.fingerprint:
                return {}
            choices = doc["choices"]
            return {k: v for k, v in choices.items() if isinstance(v, dict) and _valid_algo(v.get("algo"))}
        except (ValueError, KeyError, TypeError, AttributeError):
            return {}

    def get(self, key: str) -> dict[str, Any] | None:
        return self.choices.get(key)

    def put(self, key: str, entry: dict[str, Any]) -> None:
        """Keep ``entry`` in memory; ``flush`` writes it. A cold ``prepare`` times a problem per
        GEMM shape (175 for T82 to 1024 positions), so each is not written on its own."""
        self.choices[key] = entry
        self._unsaved.add(key)

    @property
    def dirty(self) -> bool:
        """Whether some choice is not yet written (``flush``)."""
        return bool(self._unsaved)

    def flush(self) -> None:
        """Write the folder's entry once with every unsaved choice, merged with what another
        process may have written meanwhile (the last writer wins per key). A failed write is
        logged and the choices stay for this process; nothing to write: no write."""
        if not self._unsaved:
            return
        self._unsaved.clear()
        if self.folder is None:
            return
        from lc0py.storage import cache as storage_cache

        merged = {**self._read(), **self.choices}
        doc = {"version": STORE_VERSION, "fingerprint": self.fingerprint, "choices": merged}
        path = storage_cache.EntryStore(self.folder, "tuned").store(
            self.name, json.dumps(doc, indent=1, sort_keys=True), self._inputs()
        )
        if path is None:
            log.info("GEMM algorithm choices not saved in %s (kept for this process)", self.folder)


def _valid_algo(algo: object) -> bool:
    return algo is None or (
        isinstance(algo, list)
        and len(algo) == 8
        and all(isinstance(x, int) and 0 <= x < 1 << 64 for x in algo)
    )


@dataclass
class _LtPlan:
    desc: ctypes.c_void_p
    layouts: tuple[ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]  # A, B, C (= D)
    algo: Any  # cublaslt.HeuristicResult


class LtAlgos:
    """The tuned GEMMs of one ``CudaPlatform`` (module docstring). ``store``: the kept choices;
    ``min_flops``: the smallest GEMM looked at. Not thread-safe: the network's enqueue lock
    serialises its callers."""

    def __init__(self, platform: Platform, store: AlgoStore, min_flops: float) -> None:
        from lc0py.gpu.cublaslt import load_cublaslt

        self.p = platform
        self.store = store
        self.min_flops = min_flops
        self.lib = load_cublaslt()
        self._handle = ctypes.c_void_p()
        self._check(self.lib.cublasLtCreate(ctypes.byref(self._handle)), "cublasLtCreate")
        self._plans: dict[str, _LtPlan | None] = {}
        #: per problem key: (cublasGemmEx ms, chosen ms or None) where this process timed it
        self.timings: dict[str, tuple[float, float | None]] = {}
        self._closed = False

    @staticmethod
    def fingerprint(platform: Platform) -> str:
        from lc0py.gpu.cublaslt import load_cublaslt

        info = platform.info
        version = int(load_cublaslt().cublasLtGetVersion())
        return f"{info.name}|{info.arch}|cublasLt {version}"

    @staticmethod
    def _check(status: int, what: str) -> None:
        if status != 0:
            raise GpuError(f"{what} failed (CUBLAS status {status})")

    def eligible(self, problem: LtProblem) -> bool:
        return problem.flops >= self.min_flops

    def gemm(
        self,
        call: Any,
        alpha: float,
        beta: float,
        stream: int,
        workspace: tuple[int, int],
        capturing: bool,
        default: Callable[[int], None],
    ) -> bool:
        """Run ``call`` (a ``GemmCall``, ``batch == 1``, fp16) with its kept algorithm and return
        ``True``; ``False``: the caller runs ``cublasGemmEx`` (not eligible, ``cublasGemmEx`` was
        fastest, or first seen inside a capture). ``default(c)`` runs ``cublasGemmEx`` with
        ``c`` as C (for timing); ``workspace`` is ``(pointer, bytes)`` of the stream's own."""
        problem = LtProblem.from_call(call, beta)
        if not self.eligible(problem):
            return False
        key = problem.key()
        if key in self._plans:
            plan = self._plans[key]
        elif capturing:
            return False
        else:
            plan = self._resolve(problem, key, call, stream, workspace, default)
            self._plans[key] = plan
        if plan is None:
            return False
        self._run(plan, alpha, beta, call.first, call.second, call.c, stream, workspace)
        return True

    # ---- building and choosing -------------------------------------------------------------
    def _layout(self, rows: int, cols: int, ld: int, batch: int = 1, stride: int = 0) -> ctypes.c_void_p:
        lay = ctypes.c_void_p()
        self._check(
            self.lib.cublasLtMatrixLayoutCreate(ctypes.byref(lay), _CUDA_R_16F, rows, cols, ld),
            "cublasLtMatrixLayoutCreate",
        )
        if batch > 1:
            count, offset = ctypes.c_int32(batch), ctypes.c_int64(stride)
            for attr, value in ((_LAYOUT_BATCH_COUNT, count), (_LAYOUT_STRIDED_BATCH_OFFSET, offset)):
                status = self.lib.cublasLtMatrixLayoutSetAttribute(
                    lay, attr, ctypes.byref(value), ctypes.sizeof(value)
                )
                if status != 0:
                    self.lib.cublasLtMatrixLayoutDestroy(lay)
                    self._check(status, "cublasLtMatrixLayoutSetAttribute")
        return lay

    def _describe(self, q: LtProblem) -> tuple[ctypes.c_void_p, tuple[ctypes.c_void_p, ...]]:
        lib = self.lib
        desc = ctypes.c_void_p()
        self._check(lib.cublasLtMatmulDescCreate(ctypes.byref(desc), _COMPUTE_32F, _CUDA_R_32F), "DescCreate")
        for attr, trans in ((_DESC_TRANSA, q.trans_a), (_DESC_TRANSB, q.trans_b)):
            v = ctypes.c_int(int(trans))
            status = lib.cublasLtMatmulDescSetAttribute(desc, attr, ctypes.byref(v), 4)
            self._check(status, "cublasLtMatmulDescSetAttribute")
        # stored shapes: op(A) is m x k, op(B) is k x n (column-major, leading dimension = rows)
        nb = q.batch
        a = self._layout(*((q.k, q.m) if q.trans_a else (q.m, q.k)), q.lda, nb, q.stride_a)
        b = self._layout(*((q.n, q.k) if q.trans_b else (q.k, q.n)), q.ldb, nb, q.stride_b)
        c = self._layout(q.m, q.n, q.ldc, nb, q.stride_c)
        return desc, (a, b, c)

    def _heuristic(self, q: LtProblem, desc: ctypes.c_void_p, layouts: Sequence[ctypes.c_void_p],
                   ws_bytes: int) -> list[Any]:
        from lc0py.gpu.cublaslt import HeuristicResult

        lib = self.lib
        pref = ctypes.c_void_p()
        self._check(lib.cublasLtMatmulPreferenceCreate(ctypes.byref(pref)), "PreferenceCreate")
        try:
            ws = ctypes.c_uint64(ws_bytes)
            lib.cublasLtMatmulPreferenceSetAttribute(pref, _PREF_MAX_WORKSPACE_BYTES, ctypes.byref(ws), 8)
            aligns = {"a": q.align_a, "b": q.align_b, "c": q.align_c, "d": q.align_c}
            for name, attr in _PREF_MIN_ALIGNMENT.items():
                al = ctypes.c_uint32(aligns[name])
                lib.cublasLtMatmulPreferenceSetAttribute(pref, attr, ctypes.byref(al), 4)
            results = (HeuristicResult * CANDIDATES)()
            count = ctypes.c_int(0)
            a, b, c = layouts
            status = lib.cublasLtMatmulAlgoGetHeuristic(
                self._handle, desc, a, b, c, c, pref, CANDIDATES, results, ctypes.byref(count)
            )
        finally:
            lib.cublasLtMatmulPreferenceDestroy(pref)
        if status != 0:
            return []
        return [results[i] for i in range(count.value) if results[i].state == 0]

    def _destroy(self, desc: ctypes.c_void_p, layouts: Sequence[ctypes.c_void_p]) -> None:
        for lay in layouts:
            self.lib.cublasLtMatrixLayoutDestroy(lay)
        self.lib.cublasLtMatmulDescDestroy(desc)

    def _resolve(self, q: LtProblem, key: str, call: Any, stream: int, workspace: tuple[int, int],
                 default: Callable[[int], None]) -> _LtPlan | None:
        desc, layouts = self._describe(q)
        algos = self._heuristic(q, desc, layouts, workspace[1])
        saved = self.store.get(key)
        if saved is not None:
            want = saved.get("algo")
            if want is None:
                self._destroy(desc, layouts)
                return None
            for algo in algos:
                if list(algo.algo) == want:
                    return _LtPlan(desc, layouts, algo)  # type: ignore[arg-type]
            log.info("GEMM %s: the kept algorithm is no longer offered; timing again", key)
        if not algos:
            self._destroy(desc, layouts)
            return None
        choice, default_ms, best_ms = self._time(q, desc, layouts, algos, call, stream, workspace, default)
        self.timings[key] = (default_ms, best_ms)
        entry: dict[str, Any] = {
            "algo": None if choice is None else list(algos[choice].algo),
            "default_us": round(default_ms * 1e3, 2),
            "best_us": None if best_ms is None else round(best_ms * 1e3, 2),
            "candidates": len(algos),
        }
        self.store.put(key, entry)
        log.info("GEMM %s: cublasGemmEx %.1f us, best of %d cuBLASLt algorithms %s -> %s", key,
                 default_ms * 1e3, len(algos), "-" if best_ms is None else f"{best_ms * 1e3:.1f} us",
                 "cublasGemmEx" if choice is None else f"algorithm {choice}")
        if choice is None:
            self._destroy(desc, layouts)
            return None
        return _LtPlan(desc, layouts, algos[choice])  # type: ignore[arg-type]

    def _time(self, q: LtProblem, desc: ctypes.c_void_p, layouts: tuple[ctypes.c_void_p, ...],
              algos: list[Any], call: Any, stream: int, workspace: tuple[int, int],
              default: Callable[[int], None]) -> tuple[int | None, float, float | None]:
        """``(chosen index or None, cublasGemmEx ms, chosen ms)``. Each runs ``CALLS`` times into a
        zeroed scratch C with C's layout, captured in a graph so that the host's cost of a call
        (ctypes: more than a small GEMM's device time) is not what is timed; ``ROUNDS`` rounds,
        interleaved, the best round's mean per call. On the default stream, which cannot be
        captured, the calls are timed as issued."""
        p = self.p
        nbytes = q.c_elements * 2
        scratch = p.alloc(nbytes)
        start, end = p.create_event(timing=True), p.create_event(timing=True)
        graphs: list[int | None] = []
        try:
            p.memset(scratch, 0, nbytes, stream)
            beta = 1.0 if q.accumulate else 0.0
            runners: list[Callable[[], None]] = [functools.partial(default, scratch)]
            for algo in algos:
                plan = _LtPlan(desc, layouts, algo)  # type: ignore[arg-type]
                runners.append(functools.partial(
                    self._run, plan, 1.0, beta, call.first, call.second, scratch, stream, workspace
                ))
            if stream:
                graphs = [self._capture(run, stream) for run in runners]
            best: list[float | None] = [None] * len(runners)
            failed = [bool(graphs) and g is None for g in graphs] or [False] * len(runners)
            for round_ in range(ROUNDS):
                for i, run in enumerate(runners):
                    if failed[i]:
                        continue
                    graph = graphs[i] if graphs else None
                    try:
                        if graph is not None:
                            if round_ == 0:
                                p.launch_graph(graph, stream)  # warm: first-touch costs
                            start.record(stream)
                            p.launch_graph(graph, stream)
                        else:
                            run()  # warm: loads the kernel
                            start.record(stream)
                            for _ in range(CALLS):
                                run()
                        end.record(stream)
                        end.synchronize()
                    except GpuError:
                        failed[i] = True
                        p.synchronize(stream)
                        continue
                    ms = start.elapsed_ms(end) / CALLS
                    best[i] = ms if best[i] is None else min(best[i], ms)  # type: ignore[type-var]
            default_ms = best[0]
            if default_ms is None:
                raise GpuError(f"cublasGemmEx failed while timing {q.key()}")
            choice = pick(default_ms, [(i, best[i + 1]) for i in range(len(algos))])
            return choice, default_ms, None if choice is None else best[choice + 1]
        finally:
            p.synchronize(stream)
            for graph in graphs:
                if graph is not None:
                    p.destroy_graph(graph)
            p.destroy_event(start)
            p.destroy_event(end)
            p.free(scratch)

    def _capture(self, run: Callable[[], None], stream: int) -> int | None:
        """A graph of ``CALLS`` calls of ``run`` on ``stream``, or ``None`` if one failed."""
        p = self.p
        p.begin_capture(stream)
        try:
            for _ in range(CALLS):
                run()
        except GpuError:
            with contextlib.suppress(GpuError):
                p.destroy_graph(p.end_capture(stream))
            return None
        try:
            return p.end_capture(stream)
        except GpuError:
            return None

    def _run(self, plan: _LtPlan, alpha: float, beta: float, a: int, b: int, c: int, stream: int,
             workspace: tuple[int, int]) -> None:
        al, be = ctypes.c_float(alpha), ctypes.c_float(beta)
        la, lb, lc = plan.layouts
        self._check(
            self.lib.cublasLtMatmul(
                self._handle, plan.desc, ctypes.byref(al), ctypes.c_void_p(a), la, ctypes.c_void_p(b), lb,
                ctypes.byref(be), ctypes.c_void_p(c), lc, ctypes.c_void_p(c), lc, ctypes.byref(plan.algo, 0),
                ctypes.c_void_p(workspace[0]), workspace[1], ctypes.c_void_p(stream or None),
            ),
            "cublasLtMatmul",
        )

    def flush(self) -> None:
        """Write the choices timed since the last write (``AlgoStore.flush``): after each
        ``prepare`` and on ``close``."""
        self.store.flush()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.store.flush()
        for plan in self._plans.values():
            if plan is not None:
                self._destroy(plan.desc, plan.layouts)
        self._plans.clear()
        self.lib.cublasLtDestroy(self._handle)
