"""Registry factories of ``demux``, ``roundrobin`` and ``multiplexing`` (lc0's names)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lc0py.backends.multi.backends import DemuxBackend, MultiplexingBackend, RoundRobinBackend
from lc0py.backends.multi.children import create_children
from lc0py.backends.options import BackendOptions, to_int

if TYPE_CHECKING:
    from lc0py.weights.network import Network
    from lc0py.weights.residual import ResidualNetwork

    Net = Network | ResidualNetwork | None


def create_demux(network: Net, options: BackendOptions) -> DemuxBackend:
    split = to_int("minimum-split-size", options.values.get("minimum-split-size", "0"), 0, 1 << 20)
    children = create_children("demux", network, options)
    try:
        return DemuxBackend(children, split)
    except BaseException:
        for c in children:
            c.close()
        raise


def create_roundrobin(network: Net, options: BackendOptions) -> RoundRobinBackend:
    children = create_children("roundrobin", network, options)
    try:
        return RoundRobinBackend(children)
    except BaseException:
        for c in children:
            c.close()
        raise


def create_multiplexing(network: Net, options: BackendOptions) -> MultiplexingBackend:
    children = create_children("multiplexing", network, options)
    try:
        return MultiplexingBackend(children)
    except BaseException:
        for c in children:
            c.close()
        raise
