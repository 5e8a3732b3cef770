"""The GPU runtime shared by the GPU backends (``lc0py.backends.gpu``) and the attention operator
(``lc0py.attention``): the vendor contract, its two implementations and the kernel compile cache.

* ``platform``: ``Platform`` (the abstract contract: memory, streams, events, run-time compile,
  launches, row-major GEMM, graphs), ``DeviceInfo``, ``Event``, ``HostBuffer``, ``GpuError``,
  the matrix-core facts of an arch;
* ``vendor_platform``: ``VendorPlatform``, what CUDA and HIP share (handle table, per-stream BLAS
  handles, the row-major -> column-major GEMM front end);
* ``cuda_platform`` (cuda-python, NVRTC, cuBLAS) and ``hip_platform`` (hip-python, hiprtc,
  hipBLAS): the vendors; each imports its vendor package only when a platform is created;
* ``factory``: ``create_platform(vendor, device)`` and the probes, the one module that knows both
  vendors;
* ``compile_cache``: ``KernelCache``, kernels compiled for the device's arch, cached on disk;
* ``cublaslt`` / ``cublaslt_batched``: cuBLASLt through ctypes, the FP8 GEMMs;
* ``gemm_algos``: the large fp16 GEMMs on the fastest of cuBLASLt's algorithms for their shape,
  timed on the device once and kept in the tuned folder (``CudaPlatform.use_gemm_algos``).

Imports go one way: ``platform`` <- ``vendor_platform`` <- ``cuda_platform`` / ``hip_platform``
<- ``factory``. This package imports nothing of lc0py above ``errors`` and ``storage``.
"""
