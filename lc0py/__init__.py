"""lc0py: a Python inference engine for lc0 (Leela Chess Zero) attention-body networks.

Public API (imports no vendor package):
    load_network(path, policy_head="vanilla", value_head="winner") -> Network
    create_backend(name=None, weights=None, options=None) -> Backend
    available_backends() -> list[str]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["available_backends", "create_backend", "load_network", "__version__"]

if TYPE_CHECKING:
    from lc0py.backends.registry import available_backends, create_backend
    from lc0py.weights import load_network


def __getattr__(name: str) -> Any:
    if name == "load_network":
        from lc0py.weights import load_network

        return load_network
    if name in ("create_backend", "available_backends"):
        from lc0py.backends import registry

        return getattr(registry, name)
    raise AttributeError(name)
