"""Registry factories of ``demux``, ``roundrobin`` and ``multiplexing`` (lc0's names)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from lc0py.backends.multi.backends import DemuxBackend, MultiplexingBackend, RoundRobinBackend
from lc0py.backends.multi.children import Child, create_children
from lc0py.backends.options import BackendOptions, to_int

if TYPE_CHECKING:
    from lc0py.weights.network import Network
    from lc0py.weights.residual import ResidualNetwork

    Net = Network | ResidualNetwork | None

B = TypeVar("B")


def _with_children(kind: str, network: Net, options: BackendOptions, make: Callable[[list[Child]], B]) -> B:
    """``make(children)`` over the children of ``options``' groups; the children are closed when
    ``make`` fails, so a refused combination leaks no device."""
    children = create_children(kind, network, options)
    try:
        return make(children)
    except BaseException:
        for c in children:
            c.close()
        raise


def create_demux(network: Net, options: BackendOptions) -> DemuxBackend:
    split = to_int("minimum-split-size", options.values.get("minimum-split-size", "0"), 0, 1 << 20)
    return _with_children("demux", network, options, lambda children: DemuxBackend(children, split))


def create_roundrobin(network: Net, options: BackendOptions) -> RoundRobinBackend:
    return _with_children("roundrobin", network, options, RoundRobinBackend)


def create_multiplexing(network: Net, options: BackendOptions) -> MultiplexingBackend:
    return _with_children("multiplexing", network, options, MultiplexingBackend)
