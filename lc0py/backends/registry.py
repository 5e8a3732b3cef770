"""Backends by lc0's names, created lazily, with automatic selection and fallback.

Each entry names a factory ``"module:function"`` with the signature
``factory(network: Network, options: BackendOptions) -> Backend`` and an optional cheap
``probe`` ``"module:function"`` returning ``None`` when the backend can run here or a one-line
reason when it cannot (missing package, no GPU). Nothing is imported until it is needed, so
``import lc0py`` never imports a vendor package.

``policy_head`` and ``value_head`` are backend options in lc0 (they choose the heads of a
multi-head net when the weights are loaded); ``create_backend`` takes them before the backend
sees the rest.
"""

from __future__ import annotations

import difflib
import importlib
import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lc0py.backends.options import BackendOptions
from lc0py.errors import BackendUnavailable, Lc0pyError
from lc0py.weights import default_net
from lc0py.weights.loader import load_network
from lc0py.weights.network import BaseNetwork, Network
from lc0py.weights.residual import ResidualNetwork

if TYPE_CHECKING:
    from lc0py.backends.base import Backend

log = logging.getLogger("lc0py.backends")

AUTO = "auto"


@dataclass(frozen=True)
class BackendEntry:
    name: str
    priority: int  # higher is tried first by "auto"
    factory: str  # "module:function"
    description: str
    probe: str | None = None  # "module:function" -> None | reason
    auto: bool = True  # may "auto" pick it?
    needs_weights: bool = True  # False: weights=None gives the factory network=None (random)
    device: str = "cpu"  # "gpu": runs on a GPU (tools choose their small CPU plans from this)


_REGISTRY: dict[str, BackendEntry] = {}


def register(entry: BackendEntry) -> None:
    _REGISTRY[entry.name] = entry


def _resolve(ref: str) -> Callable[..., Any]:
    module, func = ref.split(":")
    return getattr(importlib.import_module(module), func)  # type: ignore[no-any-return]


def backend_names() -> list[str]:
    """Every registered name, highest priority first."""
    return [e.name for e in sorted(_REGISTRY.values(), key=lambda e: -e.priority)]


def entry(name: str) -> BackendEntry:
    if name not in _REGISTRY:
        names = [AUTO, *backend_names()]
        guess = difflib.get_close_matches(name, names, 1)
        hint = f"; did you mean '{guess[0]}'?" if guess else ""
        raise BackendUnavailable(f"--backend '{name}': unknown backend{hint} (available: {', '.join(names)})")
    return _REGISTRY[name]


def check_name(name: str | None) -> str:
    """``name`` normalised (``None`` -> "auto"); ``BackendUnavailable`` if no backend has that name.

    Called before anything is loaded, so that a typo costs nothing (not the default net's 16 s).
    """
    name = (name or AUTO).strip().lower()
    if name != AUTO:
        entry(name)
    return name


def needs_weights(name: str) -> bool:
    """False for backends that run without a network (``random``)."""
    return name not in _REGISTRY or _REGISTRY[name].needs_weights


def default_weights() -> Path:
    """Path of the built-in default net (generated on first use), announced on stderr every time:
    its weights are random, which nothing else at run time would tell the user."""
    path = default_net.default_weights_path()
    print(f"lc0py: random weights: using the built-in random-weight net {path} (not a trained network)",
          file=sys.stderr, flush=True)
    return path


def resolve_network(
    weights: str | Path | Network | ResidualNetwork | None,
    name: str,
    policy_head: str = "vanilla",
    value_head: str = "winner",
) -> Network | ResidualNetwork | None:
    """The network backend ``name`` runs, for ``lc0py.load`` and ``create_backend`` alike.

    ``weights`` itself when it is already loaded; ``None`` when none is given and the backend runs
    without one (``random``); else the file (``None``: the built-in default net, announced by
    ``default_weights``) loaded with the chosen heads.
    """
    if isinstance(weights, BaseNetwork):
        return weights
    if weights is None and not needs_weights(name):
        return None  # e.g. "random": no net needed, do not build the default one
    path = weights if weights is not None else default_weights()
    return load_network(path, policy_head=policy_head, value_head=value_head)


def is_cpu_backend(backend: object) -> bool:
    """Whether ``backend`` computes on the CPU: its ``is_cpu`` attribute if it has one, else its
    registry entry's ``device`` (unknown names count as CPU)."""
    flag = getattr(backend, "is_cpu", None)
    if isinstance(flag, bool):
        return flag
    e = _REGISTRY.get(str(getattr(backend, "name", "")))
    return e is None or e.device == "cpu"


def _gpu_absent(skipped: list[tuple[str, str]]) -> str | None:
    """The line saying that "auto" passed over an installed GPU backend, or ``None``.

    A GPU backend whose package is missing is the normal CPU install and stays quiet (``-v`` says
    it); one whose package is there but which cannot run (no driver, no device) is a surprise
    worth one line without ``-v``. An ONNX Runtime build without GPU providers is also normal.
    """
    seen: dict[str, str] = {}
    for name, reason in skipped:
        if _REGISTRY[name].device != "gpu" or "not installed" in reason or "onnxruntime has no" in reason:
            continue
        seen.setdefault(reason, name)
    if not seen:
        return None
    reasons = "; ".join(f"{name}: {reason.split(' (')[0]}" for reason, name in seen.items())
    return f"no usable GPU ({reasons})"


ONNX_EXTRA_HINT = ('faster on a CPU: pip install "lc0py[onnx]" (ONNX Runtime: ~1.5x numpy on T82, '
                   '3.4-4.4x on Maia nets)')


def cpu_choice_line(candidate: str, skipped: list[tuple[str, str]]) -> str:
    """What "auto" says when it lands on a CPU backend: which one and why (no usable GPU), and the
    faster extra when it is what is missing (ONNX Runtime, for numpy)."""
    why = _gpu_absent(skipped) or "no GPU backend can run here (-v says why)"
    line = f"--backend auto: using {candidate} (CPU): {why}"
    onnx = dict(skipped).get("onnx-cpu", "")
    if candidate == "numpy" and "not installed" in onnx:
        line += f"; {ONNX_EXTRA_HINT}"
    return line


def unavailable_reason(name: str) -> str | None:
    """``None`` if backend ``name`` can probably run here, else why not (one line)."""
    e = entry(name)
    if e.probe is None:
        return None
    try:
        reason = _resolve(e.probe)()
    except Exception as exc:  # a probe must never take the program down
        return f"probe failed: {exc}"
    return reason if reason else None


def available_backends() -> list[str]:
    """Names of the backends that can run on this machine, highest priority first."""
    return [n for n in backend_names() if unavailable_reason(n) is None]


def create_backend(
    name: str | None = None,
    weights: str | Path | Network | ResidualNetwork | None = None,
    options: str | dict[str, str] | BackendOptions | None = None,
) -> Backend:
    """Create backend ``name`` (``None``/"auto": the best one available) for ``weights``.

    ``weights`` is a path, an already loaded ``Network`` or ``None`` for the built-in default net
    (random weights, announced on stderr; ``resolve_network``). An unknown ``name`` is refused
    before anything loads.
    """
    name = check_name(name)
    opts = BackendOptions.parse(options, backend=name)
    policy_head = opts.take("policy_head", "vanilla")
    value_head = opts.take("value_head", "winner")
    if isinstance(weights, BaseNetwork) and (policy_head, value_head) != (
        weights.policy_head_name, weights.value_head_name
    ):
        raise BackendUnavailable("policy_head/value_head options need the weights path, not a loaded network")
    network = resolve_network(weights, name, policy_head, value_head)

    if name != AUTO:
        e = entry(name)
        reason = unavailable_reason(name)
        if reason is not None:
            raise BackendUnavailable(f"--backend '{name}': {reason}")
        opts.backend = name
        return _resolve(e.factory)(network, opts)  # type: ignore[no-any-return]

    skipped: list[tuple[str, str]] = []
    failed: set[str] = set()
    for candidate in backend_names():
        e = _REGISTRY[candidate]
        if not e.auto:
            continue
        reason = unavailable_reason(candidate)
        if reason is not None:
            skipped.append((candidate, reason))
            continue
        try:
            attempt = BackendOptions(dict(opts.values), candidate, list(opts.groups), opts.root)
            backend = _resolve(e.factory)(network, attempt)
        except Lc0pyError as exc:
            skipped.append((candidate, str(exc)))
            failed.add(candidate)
            log.info("backend %s not usable, trying the next one: %s", candidate, exc)
            continue
        if skipped:
            log.info("auto backend: using %s (skipped %s)", candidate,
                     "; ".join(f"{n}: {r}" for n, r in skipped))
        if e.device == "cpu":
            print(f"lc0py: {cpu_choice_line(candidate, skipped)}", file=sys.stderr, flush=True)
        return backend  # type: ignore[no-any-return]
    raise BackendUnavailable(auto_failure(skipped, failed))


def auto_failure(skipped: list[tuple[str, str]], failed: set[str]) -> str:
    """Why "auto" found no backend, the cause first: a backend that could run here but refused
    (a bad option, an unsupported net: ``failed``) is what the user must fix, so its message leads;
    the backends that cannot run on this machine follow in short."""
    refused = [(n, r) for n, r in skipped if n in failed]
    absent = "; ".join(f"{n}: {r.split(' (')[0]}" for n, r in skipped if n not in failed)
    if not refused:
        return f"no backend can run here: {absent}"
    # a refusal that can name the fix (a misspelt option another backend knows) goes first
    refused.sort(key=lambda item: "did you mean" not in item[1])
    reason = refused[0][1]
    others = ", ".join(n for n, _ in refused[1:])
    also = f" (also refused by {others})" if others else ""
    rest = f"; the other backends cannot run here: {absent}" if absent else ""
    return f"{reason}{also} [--backend auto{rest}]"


# Registered names (lc0's where lc0 has them). GPU, ONNX and random backends register here too,
# so the list is complete even when their packages are not installed.
register(BackendEntry("numpy", 10, "lc0py.backends.numpy_backend:create", "numpy reference (CPU)"))
register(
    BackendEntry(
        "random",
        0,
        "lc0py.backends.random_backend:create",
        "no network: random outputs",
        auto=False,
        needs_weights=False,
    )
)

# ONNX Runtime: lc0's names and priorities, except that onnx-cuda ranks above onnx-cpu (lc0: 61 < 62)
# so that "auto" prefers the GPU when onnxruntime-gpu is installed.
_ORT = "lc0py.backends.onnx.runtime"
register(BackendEntry("onnx-rocm", 64, f"{_ORT}:create_rocm", "ONNX Runtime ROCm", f"{_ORT}:probe_rocm",
                     device="gpu"))
register(BackendEntry("onnx-cuda", 63, f"{_ORT}:create_cuda", "ONNX Runtime CUDA", f"{_ORT}:probe_cuda",
                     device="gpu"))
register(BackendEntry("onnx-cpu", 62, f"{_ORT}:create_cpu", "ONNX Runtime CPU", f"{_ORT}:probe_cpu"))

# GPU backends (lc0py.backends.gpu): fp16 ranks above fp32 and all rank above ONNX, so "auto" takes
# the GPU when one is present; "gpu" is whichever vendor platform is there (fp16).
_GPU = "lc0py.backends.gpu.backend"
for _name, _priority, _factory, _description, _probe in (
    ("gpu", 106, "create_gpu", "GPU (CUDA or ROCm), fp16", "probe_any"),
    ("cuda-fp16", 105, "create_cuda_fp16", "CUDA, fp16", "probe_cuda"),
    ("rocm-fp16", 104, "create_rocm_fp16", "ROCm/HIP, fp16", "probe_rocm"),
    ("cuda", 103, "create_cuda", "CUDA, fp32", "probe_cuda"),
    ("rocm", 102, "create_rocm", "ROCm/HIP, fp32", "probe_rocm"),
):
    register(
        BackendEntry(_name, _priority, f"{_GPU}:{_factory}", _description, f"{_GPU}:{_probe}", device="gpu")
    )
# FP8 GEMMs (NVIDIA compute capability 8.9+): an accuracy trade the user asks for, never "auto"
register(
    BackendEntry("cuda-fp8", 101, f"{_GPU}:create_cuda_fp8", "CUDA, FP8 e4m3 GEMMs (Ada/Hopper+)",
                 f"{_GPU}:probe_cuda", auto=False, device="gpu")
)

# lc0's multi-device backends (lc0py.backends.multi): children from nested option groups,
# ``--backend-opts=(backend=cuda-fp16,gpu=0),(backend=cuda-fp16,gpu=1)``. Never picked by "auto".
_MULTI = "lc0py.backends.multi.factory"
for _name, _priority, _description in (
    ("multiplexing", -1000, "joins the search threads' requests, then sends them to the children"),
    ("demux", -1001, "splits each batch across the children"),
    ("roundrobin", -1002, "sends whole batches to the children in turn"),
):
    register(BackendEntry(_name, _priority, f"{_MULTI}:create_{_name}", _description, auto=False))
