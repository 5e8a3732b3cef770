"""Backends: the numpy reference, ONNX Runtime and the GPU (CUDA/HIP) backends, by lc0's names."""

from lc0py.backends.base import Backend, BackendInfo, NetworkOutput, PlanesBatch
from lc0py.backends.registry import available_backends, backend_names, create_backend

__all__ = [
    "Backend",
    "BackendInfo",
    "NetworkOutput",
    "PlanesBatch",
    "available_backends",
    "backend_names",
    "create_backend",
]
